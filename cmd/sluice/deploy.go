package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/internal/deployment"
	"github.com/sluicehq/sluice/worker"
)

func init() { register(newDeployCmd) }

func newDeployCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deploy",
		Short: "Show the workers' Worker Deployment, or make a new build its current version",
		Long: `Every worker polls as one version (a build id) of its task queue's Worker
Deployment. The long-lived singletons — scope limiters, token keepers, watches,
backfill parents — are pinned to the build that started them and move to the
current version when they continue as new; everything else moves to it at its
next workflow task. The deploy procedure (docs/deploy.md):

  1. start the new build's workers (--promote never, or the default if-none:
     they do not take over a deployment that has a current version);
  2. sluice deploy promote --build-id NEW: the new build becomes current, and
     every run pinned to an older build is nudged so that it continues as
     new onto it;
  3. sluice deploy status until no open run is pinned to the old build;
  4. stop the old workers.`,
	}
	cmd.AddCommand(newDeployStatusCmd(), newDeployPromoteCmd())
	return cmd
}

func newDeployStatusCmd() *cobra.Command {
	var tf temporalFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print the deployment's current version, its versions and the open runs by build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return tf.withClient(cmd.Context(), func(tc client.Client) error {
				name := deployment.Name(tf.taskQueue)
				d, err := tc.WorkerDeploymentClient().GetHandle(name).Describe(cmd.Context(), client.WorkerDeploymentDescribeOptions{})
				if err != nil {
					return fmt.Errorf("describing deployment %s: %w", name, err)
				}
				runs, err := worker.OpenRuns(cmd.Context(), tc)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				current := "(unversioned workers)"
				if v := d.Info.RoutingConfig.CurrentVersion; v != nil {
					current = v.BuildID
				}
				fmt.Fprintf(out, "deployment %s, current version %s\n\n", name, current)
				byBuild := map[string][2]int{}
				for _, r := range runs {
					n := byBuild[r.BuildID]
					if r.Pinned() {
						n[0]++
					} else {
						n[1]++
					}
					byBuild[r.BuildID] = n
				}
				t := newTable(out, "BUILD ID\tCREATED\tDRAINAGE\tOPEN PINNED\tOPEN OTHER")
				for _, v := range d.Info.VersionSummaries {
					n := byBuild[v.Version.BuildID]
					delete(byBuild, v.Version.BuildID)
					fmt.Fprintf(t, "%s\t%s\t%s\t%d\t%d\n", v.Version.BuildID, v.CreateTime.Format(time.RFC3339), drainage(v.DrainageStatus), n[0], n[1])
				}
				if n, ok := byBuild[""]; ok {
					fmt.Fprintf(t, "(unversioned)\t-\t-\t%d\t%d\n", n[0], n[1])
				}
				if err := t.Flush(); err != nil {
					return err
				}
				for _, r := range runs {
					if r.Pinned() && r.BuildID != current {
						fmt.Fprintf(out, "pinned to %s: %s (%s)\n", r.BuildID, r.WorkflowID, r.Type)
					}
				}
				return nil
			})
		},
	}
	tf.bind(cmd.Flags())
	return cmd
}

// drainageWords names a version's drainage status; any other is "-".
var drainageWords = map[client.WorkerDeploymentVersionDrainageStatus]string{
	client.WorkerDeploymentVersionDrainageStatusDraining: "draining",
	client.WorkerDeploymentVersionDrainageStatusDrained:  "drained",
}

// drainage names a version's drainage status.
func drainage(s client.WorkerDeploymentVersionDrainageStatus) string {
	if w, ok := drainageWords[s]; ok {
		return w
	}
	return "-"
}

func newDeployPromoteCmd() *cobra.Command {
	var tf temporalFlags
	var build string
	var wait, drain time.Duration
	cmd := &cobra.Command{
		Use:   "promote",
		Short: "Make a build the current version of the deployment and move the runs pinned to older builds onto it",
		Long: `Makes --build-id the current version of the task queue's Worker Deployment:
new workflows start on it, unpinned ones move to it at their next workflow
task, and pinned singletons at their next continue-as-new. Start the build's
workers first: promote waits (--wait) for the server to know the version,
which it does once one of its workers polls.

Then, for up to --drain-wait, every open run pinned to another build gets a
signal every two seconds that only gives it a workflow task, on which it
hears of the new version and continues as new onto it. Promote ends when no
run is pinned to an older build — stop the old workers then — or lists the
runs left and fails: keep the old workers until 'sluice deploy status'
shows none (a paused backfill moves when it is resumed). --drain-wait 0
promotes only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if build == "" {
				return errors.New("--build-id is required")
			}
			return tf.withClient(cmd.Context(), func(tc client.Client) error {
				ctx, cancel := context.WithTimeout(cmd.Context(), wait)
				defer cancel()
				if err := worker.PromoteBuild(ctx, tc, tf.taskQueue, build); err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "build %s is the current version of deployment %s\n", build, deployment.Name(tf.taskQueue))
				if drain <= 0 {
					return nil
				}
				began := time.Now()
				dctx, dcancel := context.WithTimeout(cmd.Context(), drain)
				defer dcancel()
				left, err := worker.Drain(dctx, tc, build)
				if err != nil {
					return err
				}
				if len(left) == 0 {
					fmt.Fprintf(out, "no run is pinned to an older build (%s): the old workers can be stopped\n", time.Since(began).Round(time.Millisecond))
					return nil
				}
				for _, r := range left {
					fmt.Fprintf(out, "still pinned to %s: %s (%s)\n", r.BuildID, r.WorkflowID, r.Type)
				}
				return fmt.Errorf("%d run(s) still pinned to older builds after %s: keep their workers running", len(left), drain)
			})
		},
	}
	tf.bind(cmd.Flags())
	cmd.Flags().StringVar(&build, "build-id", "", "the build id to make current (the new workers' --build-id, or what they logged as build_id)")
	cmd.Flags().DurationVar(&wait, "wait", 2*time.Minute, "how long to wait for the server to know the build")
	cmd.Flags().DurationVar(&drain, "drain-wait", 2*time.Minute, "how long to nudge the runs pinned to older builds until none is left (0: do not)")
	return cmd
}
