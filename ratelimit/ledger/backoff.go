package ledger

import (
	"math"
	"time"
)

// Backoff (AIMD): when a provider rejects a call the ledger granted, its
// declaration was too generous. Each confirmed rejection multiplies the
// scope's rate by DecreaseFactor; each window without one adds
// IncreaseStep of the declared rate back, never above the declaration. So
// the rate settles just under what the provider really accepts and climbs
// back when the provider accepts more again.
const (
	// DecreaseFactor multiplies the rate on a confirmed rejection.
	DecreaseFactor = 0.85
	// IncreaseStep is the fraction of the declared rate added back per
	// window (the scope's shortest window) without a confirmed rejection:
	// from 0.4 back to the full declaration takes two minutes for a
	// per-second limit. (DecreaseFactor and IncreaseStep were chosen with
	// TestAIMDFindsTheProvidersRate: against a provider accepting 2 of 5
	// declared calls a second, gentler steps cost fewer rejected slots than
	// the sawtooth loses; steeper ones cost more.)
	IncreaseStep = 0.005
	// minFactor is the floor of the rate multiplier.
	minFactor = 1.0 / 64
)

// Penalty is a provider's rate-limit answer to a call the ledger granted.
type Penalty struct {
	// GrantID is the grant of the rejected call; 0 when unknown. It tells
	// a rejection of a call granted after the last decrease (confirmed:
	// the lowered rate is still too high) from one granted before it (in
	// flight: already answered by the decrease).
	GrantID uint64 `json:"grant_id,omitempty"`
	// RetryAfter is how long the provider asked to wait (capped at
	// MaxPause).
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// Block says the provider blocks the caller (UPBIT 418): every grant
	// waits RetryAfter, whether the rejection is confirmed or not.
	Block bool `json:"block,omitempty"`
}

// PenaltyResult says what a penalty did.
type PenaltyResult struct {
	Previous float64 `json:"previous"`
	Factor   float64 `json:"factor"`
	// Confirmed is false for the rejection of a call already in flight
	// when the rate last came down: counted, not compounded.
	Confirmed bool `json:"confirmed"`
	// Pause is how long every grant is now held back (capped), 0 if none.
	Pause time.Duration `json:"pause,omitempty"`
}

// CurrentFactor is the rate multiplier in force at now: the factor set at
// the last decrease plus IncreaseStep per whole window since, at most 1.
func (l *Ledger) CurrentFactor(now time.Time, lim Limits) float64 {
	if l.Factor <= 0 || l.Factor >= 1 {
		return 1
	}
	windows := math.Floor(float64(now.Sub(l.ChangedAt)) / float64(lim.increaseWindow()))
	if windows < 0 {
		windows = 0
	}
	return math.Min(1, l.Factor+IncreaseStep*windows)
}

// Penalize records a provider's rate-limit answer. A confirmed rejection
// multiplies the rate by DecreaseFactor (down to 1/64 of the declaration)
// and, when the provider asks for a wait longer than the scope's longest
// window, holds grants back for it; the rejection of a call granted before
// the last decrease is counted and changes nothing. A block (UPBIT 418)
// always holds grants back for its wait.
func (l *Ledger) Penalize(now time.Time, lim Limits, p Penalty) PenaltyResult {
	l.Penalties++
	prev := l.CurrentFactor(now, lim)
	res := PenaltyResult{Previous: prev, Factor: prev}
	switch {
	case l.Decreases == 0:
		res.Confirmed = true
	case p.GrantID != 0:
		res.Confirmed = p.GrantID > l.DecreaseID
	default:
		// No grant named: answers to calls granted before the decrease
		// arrive until those calls were sent and answered.
		res.Confirmed = now.After(l.DecreaseHorizon.Add(lim.Tolerance + lim.longest()))
	}
	if res.Confirmed {
		f := math.Max(minFactor, prev*DecreaseFactor)
		l.Factor, l.ChangedAt = f, now
		l.DecreaseID = l.NextID
		l.DecreaseHorizon = now
		if k := len(l.Grants); k > 0 && l.Grants[k-1].At.After(now) {
			l.DecreaseHorizon = l.Grants[k-1].At
		}
		l.Decreases++
		res.Factor = f
	}
	// A provider's wait pauses the scope when it blocks, or when it asks
	// for longer than the scope's longest window: then it says more than
	// "this window is full", which the decrease and the even spacing
	// already answer. (The rejected call itself retries after the wait.)
	if wait := min(p.RetryAfter, MaxPause); wait > 0 && (p.Block || (res.Confirmed && wait > lim.longest())) {
		if until := now.Add(wait); until.After(l.PausedUntil) {
			l.PausedUntil = until
		}
		res.Pause = wait
	}
	return res
}

// AbsorbBackoff keeps the backoff another ledger of the same scope learnt
// (penalties reported while a run was recovering): the lower factor, the
// later pause.
func (l *Ledger) AbsorbBackoff(o Ledger, now time.Time, lim Limits) {
	l.Penalties += o.Penalties
	l.Decreases += o.Decreases
	if o.PausedUntil.After(l.PausedUntil) {
		l.PausedUntil = o.PausedUntil
	}
	if o.Decreases > 0 {
		if f := o.CurrentFactor(now, lim); f < l.CurrentFactor(now, lim) {
			l.Factor, l.ChangedAt = f, now
			l.DecreaseID, l.DecreaseHorizon = l.NextID, now
		}
	}
}
