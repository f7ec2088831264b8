// Package deployment holds what Sluice's workflows and workers share about
// Temporal's Worker Deployments (Worker Versioning): every worker process
// polls as one version (deployment name, build id) of its task queue's
// deployment; the long-lived singleton workflows — scope limiters, token
// keepers, watches, backfill parents — are pinned to the version that
// started them, so one run's history is only ever served by one build, and
// they move to the deployment's current version when they continue as new
// (ContinueAsNew). See docs/deploy.md.
package deployment

import (
	"go.temporal.io/sdk/workflow"
)

// TargetChanged reports whether the server told this pinned run that its
// task queue's current version is no longer the one it is pinned to. It
// is false in every run that is not pinned, and so in every history
// recorded before Sluice pinned any workflow.
func TargetChanged(ctx workflow.Context) bool {
	return workflow.GetInfo(ctx).GetTargetWorkerDeploymentVersionChanged()
}

// Suggested reports whether the run should continue as new: the server
// suggests it (history too long or too large, too many updates) or a new
// current version waits for it (TargetChanged).
func Suggested(ctx workflow.Context) bool {
	return workflow.GetInfo(ctx).GetContinueAsNewSuggested() || TargetChanged(ctx)
}

// ContinueAsNew returns the continue-as-new error of a pinned singleton:
// the next run's first task goes to the deployment's current version
// (workflow.ContinueAsNewVersioningBehaviorAutoUpgrade), which pins it
// there once that build completes the task. Without this option a pinned
// run continues pinned to its own version forever. The continue-as-new
// command is matched by its type alone on replay, so the option changes
// nothing a replay of an earlier history compares.
func ContinueAsNew(ctx workflow.Context, wfn any, args ...any) error {
	return workflow.NewContinueAsNewErrorWithOptions(ctx, workflow.ContinueAsNewErrorOptions{
		InitialVersioningBehavior: workflow.ContinueAsNewVersioningBehaviorAutoUpgrade,
	}, wfn, args...)
}
