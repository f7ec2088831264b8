package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/internal/deployment"
	"github.com/sluicehq/sluice/tokenkeeper"
)

// keeperUpdatesPerRun bounds a keeper run's history: after this many
// updates it continues as new, carrying its state.
const keeperUpdatesPerRun = 500

// TokenKeeper is the singleton keeper of one provider token (workflow id
// tokenkeeper.WorkflowID(key), on tokenkeeper.TaskQueue): it holds the
// token record and an expiring lease, so that exactly one worker — on any
// machine — asks the token endpoint at a time and every other one finds
// its token. Updates that cannot be applied (the lease busy, a lease not
// held) are refused by their validators and leave no history; a race that
// slips past a validator is answered Busy by the handler. It continues as
// new every keeperUpdatesPerRun updates or when the server suggests it.
//
// Every payload of the keeper (its input, the token in save updates and
// in the state query) is sealed by the codec of the clients that talk to
// it; the workflow code never logs the token.
func TokenKeeper(ctx workflow.Context, in tokenkeeper.KeeperInput) error {
	st := in.State
	handled := 0
	firstRun := workflow.GetInfo(ctx).FirstRunID
	err := workflow.SetUpdateHandlerWithOptions(ctx, tokenkeeper.AcquireUpdate,
		func(ctx workflow.Context, req tokenkeeper.AcquireRequest) (tokenkeeper.AcquireResponse, error) {
			handled++
			return st.Acquire(workflow.Now(ctx), req, fmt.Sprintf("%s/%d", firstRun, st.Granted+1)), nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req tokenkeeper.AcquireRequest) error {
			if err := req.Validate(); err != nil {
				return temporal.NewNonRetryableApplicationError(err.Error(), "BadRequest", nil)
			}
			if b := st.Busy(workflow.Now(ctx), req); b != nil {
				return temporal.NewNonRetryableApplicationError("the token lease is held by another worker", tokenkeeper.ErrTypeBusy, nil, *b)
			}
			return nil
		}})
	if err != nil {
		return err
	}
	lost := func(err error) error {
		return temporal.NewNonRetryableApplicationError(err.Error(), tokenkeeper.ErrTypeLeaseLost, nil)
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, tokenkeeper.RenewUpdate,
		func(ctx workflow.Context, req tokenkeeper.RenewRequest) (tokenkeeper.Lease, error) {
			handled++
			l, err := st.Renew(workflow.Now(ctx), req.LeaseID, req.TTL)
			if err != nil {
				return l, lost(err)
			}
			return l, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req tokenkeeper.RenewRequest) error {
			if err := st.Holds(req.LeaseID); err != nil {
				return lost(err)
			}
			return nil
		}})
	if err != nil {
		return err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, tokenkeeper.SaveUpdate,
		func(ctx workflow.Context, req tokenkeeper.SaveRequest) (tokenkeeper.State, error) {
			handled++
			if err := st.Save(req.LeaseID, req.Token); err != nil {
				return st, lost(err)
			}
			return st, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req tokenkeeper.SaveRequest) error {
			if err := st.Holds(req.LeaseID); err != nil {
				return lost(err)
			}
			return nil
		}})
	if err != nil {
		return err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, tokenkeeper.ReleaseUpdate,
		func(ctx workflow.Context, req tokenkeeper.ReleaseRequest) error {
			handled++
			st.Release(req.LeaseID)
			return nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req tokenkeeper.ReleaseRequest) error {
			if err := st.Holds(req.LeaseID); err != nil {
				return lost(err) // nothing to release: no history either
			}
			return nil
		}})
	if err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, tokenkeeper.StateQuery, func() (tokenkeeper.State, error) { return st, nil }); err != nil {
		return err
	}
	if err := workflow.Await(ctx, func() bool {
		return handled >= keeperUpdatesPerRun || deployment.Suggested(ctx)
	}); err != nil {
		return err
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	return deployment.ContinueAsNew(ctx, TokenKeeper, tokenkeeper.KeeperInput{Key: in.Key, State: st})
}
