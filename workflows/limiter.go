package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/ratelimit"
)

// limiterUpdatesPerRun bounds a limiter run's history: after this many
// updates it continues as new, carrying its ledger.
const limiterUpdatesPerRun = 1000

// ScopeLimiter is the singleton limiter of one scope instance (workflow id
// ratelimit.WorkflowID(scope)). It holds the scope's ledger — recent
// grants, the day's quota count, the backoff state — and answers acquire
// updates with grant times, so that calls from every worker process on
// every machine are paced by one authority. Limits only tighten within a
// run: each request's limits are merged in with ratelimit.Stricter. It
// continues as new every limiterUpdatesPerRun updates or when the server
// suggests it.
func ScopeLimiter(ctx workflow.Context, in ratelimit.LimiterInput) error {
	if err := in.Limits.Validate(); err != nil {
		return fmt.Errorf("starting limiter %s: %w", in.ScopeID, err)
	}
	ledger, limits := in.Ledger, in.Limits
	handled := 0
	err := workflow.SetUpdateHandlerWithOptions(ctx, ratelimit.AcquireUpdate,
		func(ctx workflow.Context, req ratelimit.AcquireRequest) (ratelimit.AcquireResponse, error) {
			handled++
			now := workflow.Now(ctx)
			limits = ratelimit.Stricter(limits, req.Limits)
			ledger.Release(req.Release, limits)
			grants, quota := ledger.Reserve(now, limits, req.N, req.MaxWait, in.RecoveryStep, req.Horizon)
			resp := ratelimit.AcquireResponse{Quota: quota, Factor: ledger.CurrentFactor(now, in.RecoveryStep)}
			for _, g := range grants {
				resp.Waits = append(resp.Waits, g.Sub(now))
			}
			resp.Grants = grants
			return resp, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req ratelimit.AcquireRequest) error {
			if req.N < 1 || req.N > ratelimit.MaxBatch {
				return fmt.Errorf("acquire: n = %d, want 1 to %d", req.N, ratelimit.MaxBatch)
			}
			return req.Limits.Validate()
		}})
	if err != nil {
		return err
	}
	err = workflow.SetUpdateHandler(ctx, ratelimit.PenalizeUpdate,
		func(ctx workflow.Context, req ratelimit.PenalizeRequest) (ratelimit.PenalizeResponse, error) {
			handled++
			now := workflow.Now(ctx)
			prev := ledger.CurrentFactor(now, in.RecoveryStep)
			f := ledger.Penalize(now, req.RetryAfter, in.RecoveryStep, limits.Cooldown())
			workflow.GetLogger(ctx).Warn("ratelimit.backoff", "scope", in.ScopeID, "factor", f, "previous", prev, "reason", req.Reason)
			return ratelimit.PenalizeResponse{Previous: prev, Factor: f}, nil
		})
	if err != nil {
		return err
	}
	state := func() (ratelimit.State, error) {
		now := workflow.Now(ctx)
		return ratelimit.State{ScopeID: in.ScopeID, Limits: limits, Ledger: ledger, Factor: ledger.CurrentFactor(now, in.RecoveryStep), Now: now}, nil
	}
	if err := workflow.SetQueryHandler(ctx, ratelimit.StateQuery, state); err != nil {
		return err
	}
	err = workflow.SetUpdateHandler(ctx, ratelimit.PingUpdate, func(ctx workflow.Context) (ratelimit.State, error) {
		handled++
		return state()
	})
	if err != nil {
		return err
	}
	if err := workflow.Await(ctx, func() bool {
		return handled >= limiterUpdatesPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
	}); err != nil {
		return err
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	next := in
	next.Limits, next.Ledger = limits, ledger
	return workflow.NewContinueAsNewError(ctx, ScopeLimiter, next)
}
