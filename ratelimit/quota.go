package ratelimit

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// ErrTypeQuotaExhausted is the application error type of an activity that
// failed because a daily quota is spent (connector.QuotaExhausted).
const ErrTypeQuotaExhausted = "quota_exhausted"

// QuotaWait is the detail of a quota_exhausted activity failure: when the
// quota resets, and how long the worker's --max-quota-wait lets a dataset
// wait for it. The activity fails at once; the workflow decides whether to
// wait (AwaitQuotaReset) with a durable timer, so the wait is bounded by
// no activity timeout and spends no quota of the next day.
type QuotaWait struct {
	ResetAt time.Time     `json:"reset_at"`
	MaxWait time.Duration `json:"max_wait"`
}

// QuotaWaitOf returns the quota reset an activity error names.
func QuotaWaitOf(err error) (QuotaWait, bool) {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrTypeQuotaExhausted || !app.HasDetails() {
		return QuotaWait{}, false
	}
	var q QuotaWait
	if app.Details(&q) != nil || q.ResetAt.IsZero() {
		return QuotaWait{}, false
	}
	return q, true
}

// quotaResetMargin is waited past a quota's reset, so the first call of
// the new day is not counted against the old one by a provider whose clock
// runs a little behind.
const quotaResetMargin = time.Second

// QuotaWaiter waits out the quota resets of one activity, in workflow
// code: after a quota_exhausted failure whose reset comes within the
// allowed wait (measured from the first such failure), Wait sleeps on a
// durable workflow timer until the reset and says to run the activity
// again. The zero value allows what the failing worker's --max-quota-wait
// allows; a workflow that must wait for the quota whatever the worker says
// (a backfill waiting for the provider's midnight) sets MaxWait.
type QuotaWaiter struct {
	// MaxWait, when > 0, replaces the worker's QuotaWait.MaxWait.
	MaxWait time.Duration
	// Waits counts the resets waited for.
	Waits    int
	deadline time.Time
}

// Wait returns true after sleeping until the quota reset err names, when
// that reset lies within the allowed wait; false at once otherwise (err
// is not a quota failure, or the reset comes too late).
func (w *QuotaWaiter) Wait(ctx workflow.Context, err error) (bool, error) {
	q, ok := QuotaWaitOf(err)
	if !ok {
		return false, nil
	}
	now := workflow.Now(ctx)
	if w.deadline.IsZero() {
		allowed := q.MaxWait
		if w.MaxWait > 0 {
			allowed = w.MaxWait
		}
		w.deadline = now.Add(allowed)
	}
	if q.ResetAt.After(w.deadline) {
		return false, nil
	}
	if d := q.ResetAt.Sub(now) + quotaResetMargin; d > 0 {
		if err := workflow.Sleep(ctx, d); err != nil {
			return false, err
		}
	}
	w.Waits++
	return true, nil
}
