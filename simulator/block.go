package simulator

import (
	"net/http"
	"time"
)

// BlockRule is a provider's escalation from rate-limit answers to a block
// (UPBIT's 418, a simulator rule: UPBIT publishes no numbers): Strikes
// rejected calls within Window block the scope for Base, doubling with
// every further block up to Max. All three are divided by the rate scale.
type BlockRule struct {
	Strikes           int
	Window, Base, Max time.Duration
}

// Blocking is the outcome of AdmitBlocking.
type Blocking struct {
	// OK reports that the call was accepted.
	OK bool
	// Blocked is, when > 0, how long the scope stays blocked: the call
	// got the provider's block answer.
	Blocked time.Duration
	// Remaining is what the tightest sliding window of the scope has left
	// after an accepted call (UPBIT's Remaining-Req sec); 0 otherwise.
	Remaining int
}

// AdmitBlocking is Admit for a provider that blocks repeat offenders: on
// one scope, a call while the scope is blocked is rejected (a violation,
// counted as Blocked) without extending the block, and every rejected call
// is a strike toward the next block. With several scopes it is AdmitScopes.
func (h *Host) AdmitBlocking(r *http.Request, in *Instance, scopes []*Scope, fraction float64, rule BlockRule) Blocking {
	s := h.s
	if len(scopes) == 0 {
		return Blocking{OK: true}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(scopes) > 1 {
		adm := s.admitLocked(r, in, scopes, fraction, now)
		return Blocking{OK: adm.OK}
	}
	st := scopes[0]
	t := st.clock(now)
	if st.hasBlock && t < st.blockUntil {
		a := arrivalOf(r)
		a.Stamped = now
		st.observeArrival(now, a)
		st.rejected++
		st.noteViolation(OverWindow, "blocked")
		st.blocked++
		return Blocking{Blocked: time.Duration(st.blockUntil - t)}
	}
	st.hasBlock = false
	adm := s.admitLocked(r, in, scopes, fraction, now)
	if adm.OK {
		return Blocking{OK: true, Remaining: st.remaining(adm.t)}
	}
	st.strikes.dropThrough(t - int64(scaleDuration(rule.Window, s.scale)))
	st.strikes.push(t)
	if st.strikes.len() >= rule.Strikes {
		st.blocks++
		d := scaleDuration(rule.Base, s.scale)
		limit := scaleDuration(rule.Max, s.scale)
		for i := 1; i < st.blocks && d < limit; i++ {
			d *= 2
		}
		d = min(d, limit)
		st.blockUntil, st.hasBlock = t+int64(d), true
		st.strikes.reset()
	}
	return Blocking{}
}
