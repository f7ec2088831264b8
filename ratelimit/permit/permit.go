// Package permit is the rate-limit contract between a connector and the
// limiter: what one outbound call is (Call, its Priority and kind), what the
// limiter grants it (Permit, with a SendTracker that follows the request to
// the wire), what the connector learns of its outcome (Observation,
// Remaining), and the one interface a connector takes, Limiter. A
// connector knows nothing else of rate limiting; ratelimit.Gate implements
// Limiter (docs/ratelimit.md).
package permit

import (
	"context"
	"time"
)

// Limiter is what a connector asks before every outbound request and tells
// after it. A nil Limiter (connector.Options.Limiter) limits nothing.
type Limiter interface {
	// Wait returns once the call may be sent, with the latest moment it
	// may leave (Permit.Deadline). A non-nil error means the call must
	// not be sent.
	Wait(ctx context.Context, call Call) (Permit, error)
	// Observe is told the outcome of every call (or its transport
	// failure), so the limiter can adapt to rejections. ctx is the context
	// the call was made with.
	Observe(ctx context.Context, o Observation)
}

// Funcs is a Limiter made of two functions, for tests and for a limiter
// that wraps another: a nil WaitFunc lets every call through at once, a
// nil ObserveFunc observes nothing.
type Funcs struct {
	WaitFunc    func(ctx context.Context, call Call) (Permit, error)
	ObserveFunc func(ctx context.Context, o Observation)
}

// Wait calls WaitFunc, if set.
func (f Funcs) Wait(ctx context.Context, call Call) (Permit, error) {
	if f.WaitFunc == nil {
		return Permit{}, nil
	}
	return f.WaitFunc(ctx, call)
}

// Observe calls ObserveFunc, if set.
func (f Funcs) Observe(ctx context.Context, o Observation) {
	if f.ObserveFunc != nil {
		f.ObserveFunc(ctx, o)
	}
}

// Call identifies one outbound request for the limiter.
type Call struct {
	Provider string // registry provider id
	Dataset  string // registry dataset id; empty for token calls
	Kind     string // CallData or CallToken
	Probe    bool   // the data call is a probe
	// Priority is the call's class at the scope limiter
	// (connector.Request.Priority).
	Priority Priority
	// Tracks says the caller reports the request's way to the wire
	// through Permit.Track (connector.Base does, for every request it
	// gates), so a limiter may give a permit whose use counts on those
	// reports.
	Tracks bool
}

// Call kinds.
const (
	CallData  = "data"  // a dataset request (fetch or probe)
	CallToken = "token" // an authentication token request (KIS /oauth2/tokenP)
)

// Priority is the class of a call at the scope limiter: when calls of
// several classes wait for the same scope, the higher class is served
// first.
type Priority string

const (
	// PriorityDaily, the zero value, is a daily run's call.
	PriorityDaily Priority = ""
	// PriorityProbe is a watch probe's call: served after every daily
	// call that waits for the same scope (a limiter of rules older than
	// ledger.RulesProbe serves it as a daily call); it counts in the
	// reserved demand, not the backfill share.
	PriorityProbe Priority = "probe"
	// PriorityBackfill is a backfill's call: served after every daily call
	// that waits for the same scope, and only from the daily quota that the
	// day's reserved demand (scheduled ingests and probes) leaves.
	PriorityBackfill Priority = "backfill"
)

// Permit is what Limiter.Wait grants one request.
type Permit struct {
	// Deadline is the latest moment (on the connector's clock,
	// connector.Options.Now) the request may leave; the zero time means no
	// deadline.
	Deadline time.Time
	// Track, if not nil, follows the request to the wire: a limiter that
	// spaces the process's later calls from the moment this one was
	// written learns it here.
	Track SendTracker
}

// SendTracker follows one permitted request (Permit.Track). Its methods
// are called on the connector's clock, from net/http's goroutines.
type SendTracker interface {
	// Leave is the last check, once the request's connection is ready and
	// just before it is written: false means the permit can no longer be
	// used (its deadline passed, or its limiter gave it up), and the
	// request asks Limiter.Wait again instead of leaving.
	Leave(now time.Time) bool
	// Wrote says the request is written: its first bytes go to the
	// kernel (or, on a connection the connector did not dial, its headers
	// were written).
	Wrote(now time.Time)
	// Done says the request's round trip ended, answered or failed; it
	// comes after Wrote, or instead of it when the write was not reported.
	Done(now time.Time)
}

// Observation is what Limiter.Observe learns of one call: its outcome and
// any provider-specific signal a connector read from the answer.
// Connectors parse their own provider's signals, so a limiter never needs
// to know a provider's headers.
type Observation struct {
	Call Call
	// Status is the HTTP status, 0 when no response arrived.
	Status int
	// Err is the classified error (connector.ClassOf), a context error,
	// or nil on success.
	Err error
	// Remaining is what the provider says is left of its own budget, when
	// it says so (UPBIT Remaining-Req); nil otherwise.
	Remaining *Remaining
}

// Remaining is a provider's own account of its budget, read from an answer.
type Remaining struct {
	// Group names the provider's rate-limit group. A connector reports only
	// groups from a fixed list it knows (anything else as "other"), so the
	// value is safe as a metrics label.
	Group string
	// Left is how many calls the group's current window still allows.
	Left int
	// Window is the length of that window (one second for UPBIT).
	Window time.Duration
}
