package ratelimit

import (
	"strings"
	"time"
)

// The limiter workflow's name, update, query and id scheme. workflows.
// ScopeLimiter implements them; this package names them so that the client
// never imports the workflow code.
const (
	// WorkflowName is the registered name of the per-scope limiter workflow.
	WorkflowName = "ScopeLimiter"
	// AcquireUpdate asks for grants.
	AcquireUpdate = "acquire"
	// PenalizeUpdate reports a provider's rate-limit answer.
	PenalizeUpdate = "penalize"
	// PingUpdate starts the limiter if needed and returns its State.
	PingUpdate = "ping"
	// StateQuery returns the limiter's State.
	StateQuery = "state"
	// MaxBatch is the most grants one acquire update may ask for.
	MaxBatch = 500
)

// WorkflowID is the id of the limiter workflow of a scope instance, e.g.
// limiter/kis/key. One per namespace: the singleton every worker shares.
func WorkflowID(scopeID string) string { return "limiter/" + strings.TrimSpace(scopeID) }

// LimiterInput starts (or continues) a scope instance's limiter.
type LimiterInput struct {
	ScopeID      string        `json:"scope_id"`
	Limits       Limits        `json:"limits"`
	RecoveryStep time.Duration `json:"recovery_step,omitempty"`
	Ledger       Ledger        `json:"ledger"`
}

// AcquireRequest asks for N grants. Limits are the caller's view of the
// scope's limits: the limiter applies the stricter of its own and these.
type AcquireRequest struct {
	N       int           `json:"n"`
	Limits  Limits        `json:"limits"`
	MaxWait time.Duration `json:"max_wait"`
	// Horizon bounds how far ahead one answer reserves (see
	// Ledger.Reserve); 0: no bound.
	Horizon time.Duration `json:"horizon,omitempty"`
	// Release gives back grants of an earlier answer that arrived too late
	// to be used (see Ledger.Release); they were never handed out.
	Release []time.Time `json:"release,omitempty"`
	Caller  string      `json:"caller,omitempty"`
}

// AcquireResponse holds one wait per grant, relative to the moment the
// limiter decided (which is after the request arrived). Fewer waits than
// asked mean the daily quota ran out: Quota says until when.
type AcquireResponse struct {
	Waits []time.Duration `json:"waits"`
	// Grants are the same grants as limiter times, for Release.
	Grants []time.Time     `json:"grants"`
	Quota  *QuotaExhausted `json:"quota,omitempty"`
	Factor float64         `json:"factor"`
}

// PenalizeRequest reports that the provider answered with its rate-limit
// error although the limiter granted the call: the declaration was wrong.
type PenalizeRequest struct {
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	Reason     string        `json:"reason,omitempty"`
	Caller     string        `json:"caller,omitempty"`
}

// PenalizeResponse says the factor before and after the penalty.
type PenalizeResponse struct {
	Previous float64 `json:"previous"`
	Factor   float64 `json:"factor"`
}

// State is what the limiter workflow reports to a query.
type State struct {
	ScopeID string    `json:"scope_id"`
	Limits  Limits    `json:"limits"`
	Ledger  Ledger    `json:"ledger"`
	Factor  float64   `json:"factor"`
	Now     time.Time `json:"now"`
}
