package simulator

import (
	"time"
)

// Stats is what GET /_sim/stats returns: per scope instance, every call the
// simulated providers saw and whether it kept to the declared limits, and
// per provider the requests, authentication failures and injected faults.
// It is how tests prove that Sluice never exceeded a limit: every
// ScopeStats.Rejected must be 0 and every MaxInWindow at most its Limits.
type Stats struct {
	// Time is the simulator clock (Options.Now) when the stats were taken.
	Time time.Time `json:"time"`
	// RateScale is the factor every rate is multiplied by.
	RateScale float64 `json:"rate_scale"`
	// Scopes is keyed by scope instance id, e.g. "kis/key",
	// "datago/service/15094807".
	Scopes map[string]*ScopeStats `json:"scopes"`
	// Providers is keyed by provider id.
	Providers map[string]*ProviderStats `json:"providers"`
}

// ScopeStats is the bookkeeping of one scope instance since the start or
// the last reset.
type ScopeStats struct {
	// Provider is the registry id of the scope's provider.
	Provider string `json:"provider"`
	// Calls counts every authenticated call charged to the scope:
	// Calls = Accepted + Rejected + RejectedByFault + RejectedElsewhere.
	Calls int64 `json:"calls"`
	// Accepted counts the calls the scope let through.
	Accepted int64 `json:"accepted"`
	// Rejected counts calls over a declared limit: our violations. It
	// includes UPBIT's 418 answers while blocked.
	Rejected int64 `json:"rejected"`
	// RejectedByFault counts calls within the declared limits that a
	// fault rejected anyway (a RejectAtFraction fault, or a daily quota a
	// Shape fault spent); not a violation.
	RejectedByFault int64 `json:"rejected_by_fault"`
	// RejectedElsewhere counts calls a second scope of the same request
	// rejected (a provider with limits at several scopes).
	RejectedElsewhere int64 `json:"rejected_elsewhere"`
	// Blocked counts UPBIT 418 answers (already in Rejected).
	Blocked int64 `json:"blocked,omitempty"`
	// Violations is Rejected + TokenRejected.
	Violations int64 `json:"violations"`
	// CallsAgainstSpentQuota counts calls made after the provider had
	// answered "daily quota spent" (data.go.kr 22) the same local day,
	// whether the quota was used up by calls or spent by a Shape fault:
	// a client that understood the answer makes none until midnight.
	CallsAgainstSpentQuota int64 `json:"calls_against_spent_quota"`
	// QuotaSpent reports that the scope's daily quota is spent today (by
	// calls or by a Shape fault).
	QuotaSpent bool `json:"quota_spent,omitempty"`

	// TokenRequests counts KIS token requests on this app key
	// (/oauth2/tokenP), whatever their answer.
	TokenRequests int64 `json:"token_requests,omitempty"`
	// TokensIssued counts requests answered with a new token.
	TokensIssued int64 `json:"tokens_issued,omitempty"`
	// TokensReused counts requests answered with the token issued less
	// than 6 h before.
	TokensReused int64 `json:"tokens_reused,omitempty"`
	// TokenRejected counts requests refused with EGW00133 (more than one
	// a minute): a violation.
	TokenRejected int64 `json:"token_rejected,omitempty"`
	// MaxTokensInWindow is the most token requests seen in any window of
	// one minute (scaled).
	MaxTokensInWindow int `json:"max_tokens_in_window,omitempty"`

	// Limits are the effective declared counts per window field (unknowns
	// replaced by the registry defaults), unscaled.
	Limits map[string]int `json:"limits"`
	// WindowMS are the window lengths enforced, scaled by RateScale, in
	// milliseconds (requests_per_day is a calendar day and never scaled).
	WindowMS map[string]float64 `json:"window_ms"`
	// MinIntervalMS is the enforced minimum interval (scaled), 0 if none.
	MinIntervalMS float64 `json:"min_interval_ms"`

	// MaxInWindow is, per window field, the highest number of calls of
	// any outcome seen in any sliding window of that (scaled) length —
	// for requests_per_day, in any calendar day of the provider's
	// timezone. A value above Limits proves we sent too much.
	MaxInWindow map[string]int `json:"max_in_window"`
	// MaxAcceptedInWindow is the same over accepted calls only; the
	// simulator never lets it exceed the limit.
	MaxAcceptedInWindow map[string]int `json:"max_accepted_in_window"`
	// MinGapMS is the smallest gap between two consecutive accepted
	// calls; MinGapAllMS between two consecutive calls of any outcome.
	// Null until two such calls were seen.
	MinGapMS *float64 `json:"min_gap_ms"`
	// MinGapAllMS: see MinGapMS.
	MinGapAllMS *float64 `json:"min_gap_all_ms"`
	// DailyUsed is the accepted calls of the current day (provider's
	// timezone).
	DailyUsed int `json:"daily_used"`
	// MaxStampLagMS is the longest a call was counted (stamped) after the
	// kernel received its first bytes: how late, under load, the
	// simulator's own clock saw a call.
	MaxStampLagMS float64 `json:"max_stamp_lag_ms,omitempty"`
	// MinGapCalls are the two calls of MinGapAllMS, earlier first.
	MinGapCalls []Arrival `json:"min_gap_calls,omitempty"`
	// FirstViolation is the first call rejected over a limit, nil if
	// none.
	FirstViolation *Violation `json:"first_violation,omitempty"`
}

// ProviderStats counts what happened at one provider.
type ProviderStats struct {
	// Requests counts every request routed to the provider, faults and
	// authentication failures included.
	Requests int64 `json:"requests"`
	// AuthFailures counts requests rejected for a missing or wrong key or
	// token (not charged to any scope).
	AuthFailures int64 `json:"auth_failures"`
	// Faults counts injected faults.
	Faults FaultStats `json:"faults"`
}

// FaultStats counts injected faults by kind.
type FaultStats struct {
	// Down counts requests answered 503 by a Down fault.
	Down int64 `json:"down"`
	// Errors counts injected 5xx answers (ErrorRate).
	Errors int64 `json:"errors"`
	// Resets counts connections reset (ResetRate).
	Resets int64 `json:"resets"`
	// Delayed counts requests delayed by a Latency.
	Delayed int64 `json:"delayed"`
	// Slowed counts bodies sent slowly (SlowBody).
	Slowed int64 `json:"slowed"`
	// Truncated counts bodies cut short (TruncateAfter).
	Truncated int64 `json:"truncated"`
	// RejectedAtFraction counts rate-limit errors a RejectAtFraction
	// fault caused.
	RejectedAtFraction int64 `json:"rejected_at_fraction"`
	// Shaped counts answers a Shape fault gave.
	Shaped int64 `json:"shaped"`
}

func ms(d int64) float64 { return float64(d) / float64(time.Millisecond) }

// snapshot returns the scope's statistics; the caller holds the lock.
func (st *Scope) snapshot(now time.Time) *ScopeStats {
	out := &ScopeStats{
		Provider:               st.provider,
		Calls:                  st.calls,
		Accepted:               st.accepted,
		Rejected:               st.rejected,
		RejectedByFault:        st.rejectedByFault,
		RejectedElsewhere:      st.rejectedElsewhere,
		Blocked:                st.blocked,
		Violations:             st.rejected + st.tokenRejected,
		CallsAgainstSpentQuota: st.againstSpentQuota,
		TokenRequests:          st.tokenRequests,
		TokensIssued:           st.tokensIssued,
		TokensReused:           st.tokensReused,
		TokenRejected:          st.tokenRejected,
		MaxTokensInWindow:      st.tokenAll.peak,
		Limits:                 map[string]int{},
		WindowMS:               map[string]float64{},
		MaxInWindow:            map[string]int{},
		MaxAcceptedInWindow:    map[string]int{},
		MinIntervalMS:          ms(int64(st.minInterval)),
	}
	for _, w := range st.windows {
		out.Limits[w.field] = w.count
		out.WindowMS[w.field] = ms(int64(w.length))
		out.MaxInWindow[w.field] = w.all.peak
		out.MaxAcceptedInWindow[w.field] = w.accepted.peak
	}
	if st.acceptedGaps.minGap >= 0 {
		v := ms(st.acceptedGaps.minGap)
		out.MinGapMS = &v
	}
	if st.allGaps.minGap >= 0 {
		v := ms(st.allGaps.minGap)
		out.MinGapAllMS = &v
	}
	out.MinGapCalls = append([]Arrival(nil), st.minGapCalls...)
	out.MaxStampLagMS = ms(int64(st.maxStampLag))
	if st.firstViolation != nil {
		v := *st.firstViolation
		out.FirstViolation = &v
	}
	if st.allGaps.seen {
		st.rollDay(now)
		out.DailyUsed = st.dayAccepted
		out.QuotaSpent = st.quotaSpent()
	}
	return out
}
