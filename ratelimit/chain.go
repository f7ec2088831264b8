package ratelimit

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// Chained grants (RulesChain). A limiter spaces each window from the
// latest moment the grants before it may be sent: their grant time plus
// the caller's tolerance, which covers the round trip to the limiter and
// the caller's wake-up. Over a long run that costs one tolerance per
// window. A process that remembers when it actually wrote each of its
// requests can do better for its own calls: the limiter spaces a grant
// from the process's own earlier grants' times, and the process holds the
// call back until it is at least the link's gap after its own earlier
// sends. The tolerance is then spent once per run of the process's calls
// (the first window, and against other processes' grants), and a long run
// comes within ChainMargin of the declared rate.
//
// What counts is when the provider counted the earlier request, and that
// can be later than its write: a busy server, or the network, holds it
// back before it counts it. A provider counts a request before it answers
// it, so the process keeps each link's gap from the answer to its own
// earlier request, and waits for an answer not in yet. A chained window
// then costs the slack, ChainMargin and the round trip (the lead, which
// the caller asks for) instead of the tolerance, and a process chains its
// grants of a scope only while that is cheaper and the answers come back
// within half the shortest chained window (chainWorth).

// sendState is what a process knows of one of its grants.
type sendState uint8

const (
	// sendHanded: handed to a caller, not yet leaving. Until its
	// deadline it may still be sent; past it, a caller that reports its
	// sends (Track) can no longer send it, and one that does not is
	// taken to have sent it at the deadline.
	sendHanded sendState = iota
	// sendLeaving: its request passed the last check (at) and is being
	// written.
	sendLeaving
	// sendWrote: its request was written at at, and is not answered yet.
	sendWrote
	// sendAnswered: written at at, its round trip ended at done.
	sendAnswered
	// sendDone: its round trip ended at at without a report of the write
	// (it may have been written up to then).
	sendDone
	// sendDropped: never sent (released, or refused at Leave).
	sendDropped
)

// keepSends is how long a process remembers its sends: past the longest
// chained window, the limiter's horizon and the widest tolerance, no link
// can name them.
const keepSends = ledger.ChainMaxWindow + ledger.MaxAhead + ledger.MaxTolerance + time.Second

// stuckLeave is how long a request that left (or was written) is waited
// for before it counts as sent and answered then, although its connector
// never said so (it always does when its round trip ends).
const stuckLeave = 10 * time.Second

type sendRecord struct {
	id       uint64
	deadline time.Time // local clock
	state    sendState
	at       time.Time // local clock: when it left, was written or was done
	done     time.Time // local clock: when it was answered (sendAnswered)
	// chained says the grant was asked for chained: only such grants are
	// named by links.
	chained bool
	// latest, in a settled record (batcher.settled), is the latest anchor
	// of the sent chained records up to and including this one, zero when
	// none.
	latest time.Time
}

// final reports whether nothing can change what the record tells a link:
// it was not chained (links do not count it), was never sent, or its
// round trip ended.
func (r *sendRecord) final() bool {
	return !r.chained || r.state == sendDropped || r.state == sendAnswered || r.state == sendDone
}

// anchor is the latest moment the provider counted (or may yet count) the
// record's request, as far as is known at now; pending says it is not
// known yet.
func (r *sendRecord) anchor(now time.Time) (t time.Time, pending, sent bool) {
	switch r.state {
	case sendAnswered:
		return r.done, false, true
	case sendWrote:
		// Written, not answered: the provider may not have counted it
		// yet, however late that is.
		if now.Sub(r.at) > stuckLeave {
			return r.at.Add(stuckLeave), false, true
		}
		return time.Time{}, true, false
	case sendDone:
		return r.at, false, true
	case sendLeaving:
		if now.Sub(r.at) > stuckLeave {
			return r.at.Add(stuckLeave), false, true
		}
		return time.Time{}, true, false
	case sendHanded:
		if now.After(r.deadline) {
			return r.deadline, false, true
		}
		return time.Time{}, true, false
	}
	return time.Time{}, false, false
}

// send returns the batcher's record of grant id, or nil; c.mu held.
func (b *batcher) send(id uint64) *sendRecord {
	i, ok := slices.BinarySearchFunc(b.sends, id, func(r sendRecord, id uint64) int { return cmp.Compare(r.id, id) })
	if !ok {
		return nil
	}
	return &b.sends[i]
}

// recordSends remembers the permits of an answer as handed out, and
// forgets records too old for any link.
func (c *Client) recordSends(b *batcher, permits []Permit, chained []bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := 0
	for old < len(b.sends) {
		r := b.sends[old]
		if now.Sub(r.deadline) < keepSends || now.Sub(r.at) < keepSends {
			break
		}
		old++
	}
	b.sends = b.sends[old:]
	if old > 0 {
		// The settled records' latest anchors counted the forgotten
		// ones: settle again from the first (settleSends).
		b.settled = 0
	}
	for i, p := range permits {
		if k := len(b.sends); k > 0 && b.sends[k-1].id >= p.GrantID {
			// Ids only grow within a ledger; a smaller one comes from a
			// ledger started afresh, whose links name none of the old
			// grants.
			b.sends, b.settled = b.sends[:0], 0
		}
		b.sends = append(b.sends, sendRecord{id: p.GrantID, deadline: p.Deadline, chained: chained[i]})
	}
}

// settleSends extends the batcher's settled records over every final
// record that follows them, so that a link need not look at them one by
// one again (Ready wakes each of its callers at every change of a send,
// and a scope at full rate holds hundreds of records); c.mu held.
func (b *batcher) settleSends() {
	var latest time.Time
	if b.settled > 0 {
		latest = b.sends[b.settled-1].latest
	}
	for b.settled < len(b.sends) {
		r := &b.sends[b.settled]
		if !r.final() {
			return
		}
		if r.chained {
			// anchor's answer for a final record depends on no clock.
			if t, _, sent := r.anchor(time.Time{}); sent && t.After(latest) {
				latest = t
			}
		}
		r.latest = latest
		b.settled++
	}
}

// linkAt is what the process's own sends say of link l at now: the
// earliest moment it allows the call (zero: no constraint), whether a send
// it waits for is not known yet, and the earliest deadline of such a send
// still handed out (zero: none). The settled records up to the link's id
// count in one step, the others one by one. c.mu held.
func (b *batcher) linkAt(l ledger.Link, now time.Time) (at time.Time, pending bool, next time.Time) {
	b.settleSends()
	end := sort.Search(len(b.sends), func(i int) bool { return b.sends[i].id > l.ID })
	start := min(b.settled, end)
	at, pending, next = scanSends(b.sends[start:end], l, now)
	if start > 0 {
		if t := b.sends[start-1].latest; !t.IsZero() && t.Add(l.Gap).After(at) {
			at = t.Add(l.Gap)
		}
	}
	return at, pending, next
}

// scanSends reads link l off each of sends, by ascending id, up to the
// link's id: the latest anchor plus the gap of the chained records that
// were sent, whether one is not known yet, and the earliest deadline of
// such a record still handed out.
func scanSends(sends []sendRecord, l ledger.Link, now time.Time) (at time.Time, pending bool, next time.Time) {
	for i := range sends {
		r := &sends[i]
		if r.id > l.ID {
			break
		}
		if !r.chained {
			continue // counted by the limiter at its latest send
		}
		t, wait, sent := r.anchor(now)
		switch {
		case wait:
			pending = true
			if r.state == sendHanded && (next.IsZero() || r.deadline.Before(next)) {
				next = r.deadline
			}
		case sent:
			if t = t.Add(l.Gap); t.After(at) {
				at = t
			}
		}
	}
	return at, pending, next
}

// sendChanged wakes the callers waiting in Ready; c.mu held.
func (c *Client) sendChanged() {
	close(c.sendCh)
	c.sendCh = make(chan struct{})
}

// Ready waits until the permits allow the call: their send time, and
// every link — no earlier than the link's gap after the answer to each of
// this process's own chained requests of the scope up to the link's id
// (one not answered, or still being written, is waited for; one handed
// out but never reported counts at its deadline; one given back not at
// all). It returns ErrLate when that moment falls after a permit's
// deadline, or the context's error.
func (c *Client) Ready(ctx context.Context, permits []Permit) error {
	err := c.ready(ctx, permits)
	if errors.Is(err, ErrLate) {
		c.count(func(s *ClientStats) { s.LatePermits++ })
	}
	return err
}

func (c *Client) ready(ctx context.Context, permits []Permit) error {
	for {
		now := time.Now()
		at, end := now, time.Time{}
		pending := false
		var next time.Time // when a handed grant it waits for turns past its deadline
		c.mu.Lock()
		for _, p := range permits {
			if t := p.start(); t.After(at) {
				at = t
			}
			if end.IsZero() || p.Deadline.Before(end) {
				end = p.Deadline
			}
			if len(p.Links) == 0 {
				continue
			}
			b := c.batcher(p.Scope)
			for _, l := range p.Links {
				t, wait, dl := b.linkAt(l, now)
				if t.After(at) {
					at = t
				}
				pending = pending || wait
				if !dl.IsZero() && (next.IsZero() || dl.Before(next)) {
					next = dl
				}
			}
		}
		ch := c.sendCh
		c.mu.Unlock()
		if at.After(end) {
			return ErrLate
		}
		if !pending {
			if err := sleepUntil(ctx, at, nil); err != nil {
				return err
			}
			if time.Now().After(end) {
				return ErrLate
			}
			return nil
		}
		// Wait for the earlier send to be reported, or to turn past its
		// deadline; never past this call's own.
		until := end
		if !next.IsZero() && next.Before(until) {
			until = next
		}
		tm := time.NewTimer(max(time.Until(until), 0) + time.Microsecond)
		select {
		case <-ctx.Done():
			tm.Stop()
			return ctx.Err()
		case <-ch:
		case <-tm.C:
		}
		tm.Stop()
		if time.Now().After(end) {
			return ErrLate
		}
	}
}

// Track returns what follows the permits' request to the wire
// (permit.Permit.Track): its last check before the write, the write,
// and the end of its round trip, so that the process's later grants are
// spaced from when it was written.
func (c *Client) Track(permits []Permit) permit.SendTracker {
	return sendTracker{c: c, permits: slices.Clone(permits)}
}

type sendTracker struct {
	c       *Client
	permits []Permit
}

// Leave is the last check before the request is written: false, and every
// permit is dropped, when one is past its deadline or no longer handed
// out (released).
func (t sendTracker) Leave(now time.Time) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	ok := true
	for _, p := range t.permits {
		if now.After(p.Deadline) {
			ok = false
		}
		if r := c.batcher(p.Scope).send(p.GrantID); r != nil && r.state != sendHanded {
			ok = false
		}
	}
	for _, p := range t.permits {
		if r := c.batcher(p.Scope).send(p.GrantID); r != nil && r.state == sendHanded {
			if ok {
				r.state, r.at = sendLeaving, now
			} else {
				r.state = sendDropped
			}
		}
	}
	c.sendChanged()
	return ok
}

// Wrote records that the request was written at now.
func (t sendTracker) Wrote(now time.Time) { t.settle(now, sendWrote) }

// Done records that the request's round trip ended at now: a request that
// left without a report of its write counts as written then.
func (t sendTracker) Done(now time.Time) { t.settle(now, sendDone) }

func (t sendTracker) settle(now time.Time, st sendState) {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range t.permits {
		b := c.batcher(p.Scope)
		r := b.send(p.GrantID)
		switch {
		case r == nil:
		case r.state == sendLeaving:
			r.state, r.at = st, now
			if st == sendWrote && !p.SendAt.IsZero() {
				c.metrics.Sent(p.Scope, now.Sub(p.SendAt))
				if now.Before(p.SendAt) {
					c.count(func(s *ClientStats) { s.EarlySends++ })
				}
			}
		case r.state == sendWrote && st == sendDone:
			r.state, r.done = sendAnswered, now
			b.roundTrips.add(now.Sub(r.at))
			c.metrics.Answered(p.Scope, now.Sub(r.at))
		}
	}
	c.sendChanged()
}

// roundTripSamples is how many recent round trips a scope's median is
// taken from.
const roundTripSamples = 64

// roundTrips keeps a scope's recent round trips, from a request's write to
// its answer.
type roundTrips struct {
	samples [roundTripSamples]time.Duration
	n       int
}

func (r *roundTrips) add(d time.Duration) {
	r.samples[r.n%roundTripSamples] = max(d, 0)
	r.n++
}

// median is the middle recent round trip; 0 before any.
func (r *roundTrips) median() time.Duration {
	n := min(r.n, roundTripSamples)
	if n == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(r.samples[:n]))
	return sorted[n/2]
}

// chainMinSamples is how many round trips a scope needs before its grants
// are chained.
const chainMinSamples = 8

// chainWorth reports whether the process should chain its grants of a
// scope with these limits (at tolerance tol): once the scope's median
// round trip of the last 64 is known (chainMinSamples), shorter than
// tol less ChainMargin and ChainLead (a chained window costs the round
// trip, an unchained one the tolerance) and under half its shortest window
// or interval a grant is chained over (a provider slower than that would
// keep each linked call waiting for the answer before it). Otherwise the
// scope's grants are spaced by their tolerance. c.mu held.
func (b *batcher) chainWorth(lim ledger.Limits, tol time.Duration) bool {
	if b.roundTrips.n < chainMinSamples {
		return false
	}
	if rt := b.roundTrips.median(); rt+ledger.ChainMargin+ledger.ChainLead >= tol {
		return false
	}
	shortest := lim.MinInterval
	for _, w := range lim.Windows {
		if w.Length <= ledger.ChainMaxWindow && (shortest == 0 || w.Length < shortest) {
			shortest = w.Length
		}
	}
	return shortest > 0 && b.roundTrips.median() < shortest/2
}
