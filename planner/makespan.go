package planner

import (
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/registry"
)

// predict fills in each scope plan's makespan and provider-days by
// running the plan's calls through the limiter's own ledger
// (ledger.Ledger.Reserve) on a virtual clock: every call is asked for
// as soon as the one before it was granted (a backlog that never
// empties), a call counting against several scopes is granted only at an
// instant every one of them allows, and a scope whose day's share is spent
// waits for the provider-local midnight, as the limiter does.
//
// Scopes that share no dataset run side by side; scopes that do (a
// provider-wide limit over per-service ones) are simulated together.
func predict(reg *registry.Registry, p *Plan, in Input) {
	idx := map[string]int{}
	for i, sp := range p.Scopes {
		idx[sp.Scope] = i
	}
	// Classes: the calls of chunks with the same scope set.
	type class struct {
		scopes []string
		left   int
	}
	classes := map[string]*class{}
	var order []string
	parent := make([]int, len(p.Scopes))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, c := range p.Chunks {
		if len(c.Scopes) == 0 || c.Calls == 0 {
			continue
		}
		key := strings.Join(c.Scopes, "\x00")
		cl := classes[key]
		if cl == nil {
			cl = &class{scopes: c.Scopes}
			classes[key] = cl
			order = append(order, key)
		}
		cl.left += c.Calls
		for _, s := range c.Scopes[1:] {
			parent[find(idx[s])] = find(idx[c.Scopes[0]])
		}
	}
	components := map[int][]*class{}
	var roots []int
	for _, key := range order {
		cl := classes[key]
		r := find(idx[cl.scopes[0]])
		if components[r] == nil {
			roots = append(roots, r)
		}
		components[r] = append(components[r], cl)
	}
	for _, r := range roots {
		cls := components[r]
		var members []int
		for i := range p.Scopes {
			if find(i) == r {
				members = append(members, i)
			}
		}
		stalled := false
		for _, i := range members {
			stalled = stalled || p.Scopes[i].Stalled
		}
		if stalled {
			for _, i := range members {
				p.Scopes[i].Stalled = true
			}
			continue
		}
		first := reg.Scope(p.Scopes[members[0]].Scope)
		loc := first.Provider.Location
		if loc == nil {
			loc = time.UTC
		}
		start := in.Start
		if start.IsZero() {
			start = time.Date(2001, 1, 1, 0, 0, 0, 0, loc)
		}
		sims := map[string]*scopeSim{}
		for _, i := range members {
			sp := &p.Scopes[i]
			s := reg.Scope(sp.Scope)
			sims[sp.Scope] = &scopeSim{lim: limitsOf(s, sp, in), plan: sp}
		}
		now := start
		for {
			var best *class
			var bestAt time.Time
			for _, cl := range cls {
				if cl.left == 0 {
					continue
				}
				at := jointSlot(sims, cl.scopes, now)
				if best == nil || at.Before(bestAt) {
					best, bestAt = cl, at
				}
			}
			if best == nil {
				break
			}
			for _, id := range best.scopes {
				sims[id].commit(bestAt)
			}
			best.left--
			now = bestAt
		}
		for _, sim := range sims {
			if sim.calls == 0 {
				continue
			}
			sim.plan.Makespan = sim.last.Sub(start)
			sim.plan.ProviderDays = dayNumber(sim.last, loc) - dayNumber(start, loc) + 1
		}
	}
}

// dayNumber numbers the provider-local civil day of t.
func dayNumber(t time.Time, loc *time.Location) int {
	y, m, d := t.In(loc).Date()
	return int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// scopeSim is one scope instance's ledger in a prediction.
type scopeSim struct {
	lim    ledger.Limits
	ledger ledger.Ledger
	plan   *ScopePlan
	calls  int
	last   time.Time
}

// slot is the first instant at or after now the ledger would grant, with
// the ledger left unchanged.
func (s *scopeSim) slot(now time.Time) time.Time {
	l := s.ledger
	l.Grants = slices.Clone(s.ledger.Grants)
	l.Days = slices.Clone(s.ledger.Days)
	l.Chains = slices.Clone(s.ledger.Chains)
	return reserve(&l, s.lim, now)
}

// commit grants one call at or after at.
func (s *scopeSim) commit(at time.Time) {
	s.last = reserve(&s.ledger, s.lim, at)
	s.calls++
}

// reserve asks the ledger for one grant from now on, waiting for the
// slot (RetryIn) or the quota's reset as a client does, and returns it.
// It asks as one worker process does, its grants chained (each sent at
// its grant's time, which keeps every link).
func reserve(l *ledger.Ledger, lim ledger.Limits, now time.Time) time.Time {
	for {
		ans := l.Reserve(now, lim, ledger.Ask{N: 1, Rules: ledger.RulesLatest, Caller: "plan", Chain: true})
		switch {
		case len(ans.Grants) > 0:
			return ans.Grants[0].At
		case ans.Quota != nil:
			now = ans.Quota.ResetAt
		case ans.RetryIn > 0:
			now = now.Add(ans.RetryIn)
		default:
			now = now.Add(time.Millisecond)
		}
	}
}

// jointSlot is the first instant at or after now that every scope of a
// call allows: each scope's slot, raised to the latest until they agree.
func jointSlot(sims map[string]*scopeSim, scopes []string, now time.Time) time.Time {
	if len(scopes) == 1 {
		return sims[scopes[0]].slot(now)
	}
	at := now
	for range 1000 {
		latest := at
		for _, id := range scopes {
			if g := sims[id].slot(at); g.After(latest) {
				latest = g
			}
		}
		if latest.Equal(at) {
			return at
		}
		at = latest
	}
	return at
}
