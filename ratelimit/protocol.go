package ratelimit

import (
	"strings"
	"time"

	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// The limiter workflow's name, updates, query and id scheme.
const (
	// WorkflowName is the registered name of the per-scope limiter
	// workflow (ScopeLimiter).
	WorkflowName = "ScopeLimiter"
	// AcquireUpdate asks for grants.
	AcquireUpdate = "acquire"
	// PenalizeUpdate reports a provider's rate-limit answer.
	PenalizeUpdate = "penalize"
	// PingUpdate starts the limiter if needed and returns its State.
	PingUpdate = "ping"
	// RecoverUpdate hands a new run the state of the run before it (or
	// tells it to quarantine).
	RecoverUpdate = "recover"
	// ReconfigureUpdate sets or clears an operator's limits for the scope.
	ReconfigureUpdate = "reconfigure"
	// StateQuery returns the limiter's State.
	StateQuery = "state"
	// MaxBatch is the most grants one acquire update may ask for.
	MaxBatch = 500
)

// WorkflowID is the id of the limiter workflow of a scope instance, e.g.
// limiter/kis/key. One per namespace: the singleton every worker shares.
func WorkflowID(scopeID string) string { return "limiter/" + strings.TrimSpace(scopeID) }

// LimiterProtocol is the version of the limiter protocol a client starts
// limiters with. Version 2 recovers its state when a run starts without it;
// a run started by a version-1 client (Protocol 0: before grant ids and
// recovery) keeps that version's rules, so a limiter running across the
// upgrade never drops its own grants.
const LimiterProtocol = 2

// LimiterInput starts (or continues) a scope instance's limiter.
type LimiterInput struct {
	ScopeID string `json:"scope_id"`
	// Protocol is LimiterProtocol for a limiter started by this version.
	Protocol int `json:"protocol,omitempty"`
	// Limits are the limits in force: the starting caller's, or, when
	// continuing, the effective limits of the run before.
	Limits ledger.Limits `json:"limits"`
	Ledger ledger.Ledger `json:"ledger"`
	// Callers are the limits each client last asked with (see State).
	Callers []CallerLimits `json:"callers,omitempty"`
	// Override and Epoch are the operator's limits (reconfigure).
	Override *ledger.Limits `json:"override,omitempty"`
	Epoch    int            `json:"epoch,omitempty"`
	// Recovered says Ledger is this scope's state, carried across
	// continue-as-new. A run started without it (a first start, or a start
	// after a terminate or a cancel) recovers the last run's state before
	// it grants anything, and so does a reset run.
	Recovered bool `json:"recovered,omitempty"`
}

// AcquireRequest asks for N grants. Limits are the caller's view of the
// scope's limits: the limiter enforces the stricter of every live caller's
// (see State.Callers). The request is a JSON object: fields added later
// (a caller's priority, say) are ignored by older limiters and default to
// zero in newer ones.
type AcquireRequest struct {
	N       int           `json:"n"`
	Limits  ledger.Limits `json:"limits"`
	MaxWait time.Duration `json:"max_wait"`
	// Horizon bounds how far ahead one answer reserves (Ask.Horizon);
	// 0: no bound.
	Horizon time.Duration `json:"horizon,omitempty"`
	// Delay holds the grants back until Delay after the limiter decides
	// (Ask.Delay).
	Delay time.Duration `json:"delay,omitempty"`
	// Release gives back, by id, grants of earlier answers that will never
	// be used (Ledger.Release). Sending an id twice is harmless.
	Release []uint64 `json:"release_ids,omitempty"`
	Caller  string   `json:"caller,omitempty"`
	// Priority is the class of the calls asked for: daily (the zero
	// value) before backfill (Ask.Priority). A limiter of the legacy rules
	// ignores it.
	Priority permit.Priority `json:"priority,omitempty"`
	// Chain says the caller keeps the links of its grants (Ask.Chain). A
	// limiter before RulesChain ignores it and sends no links.
	Chain bool `json:"chain,omitempty"`
	// Lead is the chained caller's lead (Ask.Lead).
	Lead time.Duration `json:"lead,omitempty"`
	// NotBefore and NotAfter bound the first grant to a window of the
	// limiter's clock (Ask.NotBefore, Ask.NotAfter): a call holding
	// several scopes asks each for a grant its other permits cover. A
	// limiter run before RulesWindow ignores them; the client then asks
	// the start as a Delay and checks the grant itself.
	NotBefore time.Time `json:"not_before,omitzero"`
	NotAfter  time.Time `json:"not_after,omitzero"`
}

// AcquireResponse holds one wait per grant, relative to the moment the
// limiter decided (which is after the request arrived).
type AcquireResponse struct {
	Waits []time.Duration `json:"waits"`
	// Grants are the same grants, with their ids for Release and
	// Penalize.
	Grants []ledger.Grant `json:"grants"`
	// Quota is set when the daily quota ran out: fewer grants than asked.
	Quota *ledger.QuotaExhausted `json:"quota,omitempty"`
	// RetryIn is set when no grant fits within MaxAhead: ask again then.
	RetryIn time.Duration `json:"retry_in,omitempty"`
	Factor  float64       `json:"factor"`
	// Recover says the limiter (run RunID) has not recovered the state of
	// the run before it yet and grants nothing: recover it (RecoverUpdate)
	// and ask again.
	Recover bool   `json:"recover,omitempty"`
	RunID   string `json:"run_id,omitempty"`
	// Rules are the ledger rules the limiter run follows. Under
	// RulesPriority each grant keeps its own caller's tolerance, so a
	// client may lower its tolerance to its round trips (a run of the
	// legacy rules spaces by the largest live one, which must then never
	// shrink).
	Rules int `json:"rules,omitempty"`
	// Yielded says a backfill got nothing because daily callers wait.
	Yielded bool `json:"yielded,omitempty"`
	// Earliest is the first slot when it lies after the request's
	// NotAfter: nothing was granted (Answer.Earliest).
	Earliest time.Time `json:"earliest,omitzero"`
	// Links are, per grant, the caller's own earlier grants it must keep
	// its distance from (RulesChain, a chaining caller; Ledger.Reserve).
	Links [][]ledger.Link `json:"links,omitempty"`
	// Ahead are, per grant, how long before its wait the call may be sent
	// once its links allow it (RulesAhead, a chaining caller;
	// ledger.Answer.Ahead).
	Ahead []time.Duration `json:"ahead,omitempty"`
}

// PenalizeRequest reports that the provider answered with its rate-limit
// error although the limiter granted the call: the declaration was wrong.
type PenalizeRequest struct {
	ledger.Penalty
	Reason string `json:"reason,omitempty"`
	Caller string `json:"caller,omitempty"`
}

// PenalizeResponse says what the penalty did.
type PenalizeResponse = ledger.PenaltyResult

// RecoverRequest hands the run ForRunID the state of the run before it.
// A run other than ForRunID ignores it (it is a reset of that run, or a
// later one), and so does a run that recovered already.
type RecoverRequest struct {
	ForRunID string `json:"for_run_id"`
	// From is the run State was read from; empty with no State when the
	// scope had no earlier run.
	From  string `json:"from,omitempty"`
	State *State `json:"state,omitempty"`
	// Quarantine says the earlier state could not be read: the limiter
	// grants nothing until any grant it could have given is clear
	// (Ledger.Quarantine).
	Quarantine bool   `json:"quarantine,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Caller     string `json:"caller,omitempty"`
}

// ReconfigureRequest sets the operator's limits of a scope (Limits), or
// clears them (nil). Limits set this way hold until cleared, and callers'
// limits asked for before the change no longer count (their tolerance
// does, while they live).
type ReconfigureRequest struct {
	Limits *ledger.Limits `json:"limits,omitempty"`
	Reason string         `json:"reason,omitempty"`
	Caller string         `json:"caller,omitempty"`
}

// CallerLimits are the limits one client (one worker process) last asked
// with, and when. A client not seen for CallerTTL no longer counts.
type CallerLimits struct {
	Caller string        `json:"caller"`
	Limits ledger.Limits `json:"limits"`
	Seen   time.Time     `json:"seen"`
	// Epoch is the reconfigure epoch the client asked in.
	Epoch int `json:"epoch,omitempty"`
}

// State is what the limiter workflow reports to a query, and what a new
// run recovers from the run before it.
type State struct {
	ScopeID string `json:"scope_id"`
	RunID   string `json:"run_id,omitempty"`
	// Limits are the effective limits: the stricter of every live
	// caller's and the operator's.
	Limits   ledger.Limits  `json:"limits"`
	Ledger   ledger.Ledger  `json:"ledger"`
	Callers  []CallerLimits `json:"callers,omitempty"`
	Override *ledger.Limits `json:"override,omitempty"`
	Epoch    int            `json:"epoch,omitempty"`
	// Recovering is true while the run has not recovered the run before
	// it: it has granted nothing.
	Recovering    bool      `json:"recovering,omitempty"`
	RecoveredFrom string    `json:"recovered_from,omitempty"`
	Factor        float64   `json:"factor"`
	Now           time.Time `json:"now"`
	// Rules is the generation of ledger rules the run follows
	// (RulesAnswer on; 0 in the answers of runs before it).
	Rules int `json:"rules,omitempty"`
}
