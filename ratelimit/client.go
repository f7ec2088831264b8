package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/internal/kind"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// ErrLate means a permit's send window passed before the caller could use
// it (the process stalled): the caller must acquire again, never send.
var ErrLate = errors.New("permit expired before use")

// QuotaError is returned by Acquire when the scope's daily quota has no
// room within the caller's maximum wait.
type QuotaError struct {
	Scope string
	ledger.QuotaExhausted
}

// Error says which scope's quota is spent and until when.
func (e *QuotaError) Error() string {
	if e.Backfill {
		return fmt.Sprintf("scope %s: the backfill share of the daily quota (%d calls after the reserved daily demand) is spent until %s", e.Scope, e.Quota, e.ResetAt.Format(time.RFC3339))
	}
	return fmt.Sprintf("scope %s: daily quota of %d calls exhausted until %s", e.Scope, e.Quota, e.ResetAt.Format(time.RFC3339))
}

// longWait is the longest a client holds a caller for a slot beyond
// MaxAhead (a paused scope, a backlog); past it Acquire returns a
// *WaitError and the caller retries later (an activity through
// Temporal's durable retry, not a sleeping worker slot).
const longWait = time.Minute

// WaitError is returned by Acquire when the scope's next slot is more
// than a minute away (the scope is paused after a provider's Retry-After
// or block, or its backlog is long): try again after Wait.
type WaitError struct {
	Scope string
	Wait  time.Duration
}

// Error says which scope is held back and for how long.
func (e *WaitError) Error() string {
	return fmt.Sprintf("scope %s: no slot for %s (held back after the provider's wait, or a long backlog)", e.Scope, e.Wait.Round(time.Second))
}

// NotWithinError says a scope has no slot within the window an acquire
// asked for (AcquireOptions.NotAfter): nothing was granted; its first
// slot is Earliest (the limiter's clock).
type NotWithinError struct {
	Scope    string
	Earliest time.Time
}

// Error says which scope has no slot in the window, and its first one.
func (e *NotWithinError) Error() string {
	return fmt.Sprintf("scope %s: no slot within the window asked for (first at %s)", e.Scope, e.Earliest.Format(time.RFC3339Nano))
}

// Permit allows one call to a scope instance. The call must be sent at or
// after SendAt and no later than Deadline; Wait sleeps until then. A permit
// not used is given back with Client.Release.
type Permit struct {
	Scope    string
	GrantID  uint64
	SendAt   time.Time // local clock
	Deadline time.Time // local clock
	// At and Until are the grant's send window on the limiter's clock:
	// its time, and its time plus the tolerance it was asked with.
	At, Until time.Time
	// Links are the process's own earlier grants of the scope this call
	// keeps its distance from (a limiter of RulesChain): Wait and
	// Client.Ready hold it back until each allows it.
	Links []ledger.Link
	// Early (local clock; a chained grant of a limiter of RulesAhead) is
	// the earliest moment the call may leave when its links allow it:
	// every other constraint of the limiter holds from then on. Zero
	// means SendAt.
	Early time.Time

	client *Client
}

// Wait sleeps until the permit's send time (Early, for a chained grant
// that may leave before it) — and until its links allow the call
// (Client.Ready) — and returns nil if the caller is still within
// its send window, ErrLate if it is not (acquire again), or the context's
// error. tick, if not nil, is called about every second while waiting
// (activities heartbeat from it). A call sent after Wait is taken to have
// been sent at its deadline (Client.Ready); one that reports its send
// (Client.Track) lets the process's later calls follow it closer.
func (p Permit) Wait(ctx context.Context, tick func()) error {
	if err := sleepUntil(ctx, p.start(), tick); err != nil {
		return err
	}
	if p.client != nil && len(p.Links) > 0 {
		return p.client.Ready(ctx, []Permit{p})
	}
	if time.Now().After(p.Deadline) {
		return ErrLate
	}
	return nil
}

// start is the earliest moment the permit lets its call leave, its links
// aside: Early, or SendAt.
func (p Permit) start() time.Time {
	if !p.Early.IsZero() {
		return p.Early
	}
	return p.SendAt
}

// sleepUntil sleeps until t (local clock), calling tick about every second.
func sleepUntil(ctx context.Context, t time.Time, tick func()) error {
	for {
		d := time.Until(t)
		if d <= 0 {
			return nil
		}
		if tick != nil && d > time.Second {
			d = time.Second
		}
		tm := time.NewTimer(d)
		select {
		case <-ctx.Done():
			tm.Stop()
			return ctx.Err()
		case <-tm.C:
		}
		if tick != nil {
			tick()
		}
	}
}

// Client asks the limiter workflows for permits on behalf of one process.
// Concurrent Acquire calls for one scope are batched into a single acquire
// update in flight per scope per process, so that a fan-out of hundreds of
// activities costs the limiter a handful of updates. When a limiter run
// says it must first recover the state of the run before it, the client
// reads that state and hands it over (see recover.go). Safe for concurrent
// use; the zero value is not usable: call NewClient.
type Client struct {
	tc        client.Client
	taskQueue string
	caller    string
	log       *slog.Logger
	fit       bool
	noChain   bool
	metrics   *metrics.Metrics // nil: none

	// sendCh is closed and replaced whenever a send record changes
	// (guarded by mu): Ready waits on it.
	sendCh chan struct{}

	mu     sync.Mutex
	scopes map[string]*batcher

	statsMu sync.Mutex
	stats   ClientStats
}

// ClientStats counts what a client did, for metrics and benchmarks.
type ClientStats struct {
	Updates    int64         // acquire updates sent
	Granted    int64         // permits handed out
	Released   int64         // grants given back (late answers, unused permits)
	LateBatch  int64         // batches discarded because the round trip exceeded the tolerance
	Recoveries int64         // recover updates sent
	MaxRTT     time.Duration // slowest acquire round trip
	// LatePermits counts permits whose call could not leave before their
	// deadline (Ready: the process stalled, or a link held it back too
	// long); the call asked again.
	LatePermits int64
	// EarlySends counts tracked calls written before their permit's send
	// time (a chained grant of a limiter of RulesAhead, its links
	// allowing it).
	EarlySends int64
	// Tolerance is the tolerance the last acquire asked with (fitted to
	// the round trips, or widened).
	Tolerance time.Duration
}

// ClientOptions configure a Client.
type ClientOptions struct {
	TaskQueue string // where limiter workflows run
	Logger    *slog.Logger
	// FitTolerance fits the tolerance to the acquire round trips (see
	// batcher.tolerance) instead of using the configured one: long runs
	// come nearer the declared rate, at the cost of the room the fixed
	// tolerance leaves for jitter after the send (measured: a rejection
	// under a load average of 19 on 2 cores). Off by default.
	FitTolerance bool
	// NoChain asks limiters for unchained grants, each window spaced from
	// the latest send moment of the grants before it (for comparisons:
	// chaining is what lets a long run approach the declared rate).
	NoChain bool
	// Metrics, when set, receives each tracked call's time from its
	// permit's send time to its write (Metrics.Sent) and from its write to
	// its answer (Metrics.Answered): what every chained window pays.
	Metrics *metrics.Metrics
}

// NewClient returns a limiter client over a Temporal client.
func NewClient(tc client.Client, opts ClientOptions) *Client {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	host, _ := os.Hostname()
	return &Client{
		tc: tc, taskQueue: opts.TaskQueue, log: log, scopes: map[string]*batcher{}, fit: opts.FitTolerance, noChain: opts.NoChain, metrics: opts.Metrics,
		sendCh: make(chan struct{}),
		caller: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8]),
	}
}

// Caller is the id the client sends with its requests: host, process and
// a random part.
func (c *Client) Caller() string { return c.caller }

// Stats returns a snapshot of the client's counters.
func (c *Client) Stats() ClientStats {
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
	return c.stats
}

func (c *Client) count(f func(*ClientStats)) {
	c.statsMu.Lock()
	f(&c.stats)
	c.statsMu.Unlock()
}

// AcquireOptions qualify one Acquire.
type AcquireOptions struct {
	// MaxWait is how long the permit may wait for a daily quota's reset
	// (at most MaxAhead); past it Acquire returns a *QuotaError.
	MaxWait time.Duration
	// Delay asks for a permit no earlier than Delay from now (aligning
	// the permits of several scopes).
	Delay time.Duration
	// NotBefore and NotAfter, when not zero, bound the permit's grant to
	// a window of the limiter's clock (Ask.NotBefore, Ask.NotAfter); when
	// its first slot lies after NotAfter, Acquire returns a
	// *NotWithinError and nothing is held.
	NotBefore, NotAfter time.Time
	// Priority is the call's class: daily callers (the zero value) are
	// served before backfill callers, in this process and at the limiter.
	Priority permit.Priority
	// Chain says the caller reports its request's way to the wire
	// through Client.Track: the client then asks for chained grants
	// (RulesChain) once the scope's answers are known to come back quickly
	// enough (batcher.chainWorth), so the process's later grants may follow
	// its sends closer. A caller that does not report must not set it.
	Chain bool
	// trips, when set, counts the acquire updates the ask went out in
	// (trips.go).
	trips *atomic.Int64
}

type waiter struct {
	ctx    context.Context
	limits ledger.Limits
	opts   AcquireOptions
	res    chan result
}

type result struct {
	permit Permit
	err    error
}

type batcher struct {
	scope   string
	pending []*waiter
	running bool
	// release holds ids of grants that will not be used, given back with
	// the next acquire.
	release []uint64
	// late counts consecutive answers slower than the tolerance; tol,
	// when set, is the tolerance widened to the round trips observed.
	late int
	tol  time.Duration
	// rtts are the latest acquire round trips, for the fitted tolerance;
	// rules are the ledger rules of the limiter's last answer.
	rtts  []time.Duration
	rules int
	fit   bool // ClientOptions.FitTolerance
	// sends are this process's grants of the scope (RulesChain), by
	// ascending id: what its later grants' links are measured from.
	// settled counts the leading records whose anchor can no longer
	// change (settleSends), each carrying the latest anchor up to it.
	sends   []sendRecord
	settled int
	// roundTrips are the scope's recent round trips (write to answer).
	roundTrips roundTrips
	// recoverMu serializes this process's recoveries of the scope (the
	// batcher and Warm may both find the limiter recovering);
	// recoverFailures counts failed attempts to read the last run's state.
	recoverMu       sync.Mutex
	recoverFailures int
}

// Acquire returns a permit for one call to the scope instance. It blocks
// for a round trip to the limiter (batched with the process's other
// callers), longer only when no slot fits within MaxAhead; it does not
// wait for the permit's send time: call Permit.Wait before sending.
func (c *Client) Acquire(ctx context.Context, scopeID string, lim ledger.Limits, opts AcquireOptions) (Permit, error) {
	if err := lim.Validate(); err != nil {
		return Permit{}, fmt.Errorf("acquiring permit for %s: %w", scopeID, err)
	}
	w := &waiter{ctx: ctx, limits: lim, opts: opts, res: make(chan result, 1)}
	c.mu.Lock()
	b := c.batcher(scopeID)
	b.pending = append(b.pending, w)
	if !b.running {
		b.running = true
		go c.run(b)
	}
	c.mu.Unlock()
	select {
	case r := <-w.res:
		return r.permit, r.err
	case <-ctx.Done():
		// A permit handed out as the context ended is given back.
		go func() {
			if r := <-w.res; r.err == nil {
				c.Release(r.permit)
			}
		}()
		return Permit{}, ctx.Err()
	}
}

// batcher returns the scope's batcher; c.mu must be held.
func (c *Client) batcher(scopeID string) *batcher {
	b := c.scopes[scopeID]
	if b == nil {
		b = &batcher{scope: scopeID, fit: c.fit}
		c.scopes[scopeID] = b
	}
	return b
}

// Release gives permits that will not be used back to their scopes'
// ledgers, with the next acquire of each scope from this process. A
// permit released twice, or already expired, is harmless.
func (c *Client) Release(permits ...Permit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range permits {
		if p.GrantID != 0 {
			b := c.batcher(p.Scope)
			b.release = append(b.release, p.GrantID)
			if r := b.send(p.GrantID); r != nil && r.state == sendHanded {
				r.state = sendDropped
			}
		}
	}
	c.sendChanged()
}

// take removes from the pending waiters the next batch: the live waiters
// of the first daily waiter's class, Delay and Chain (the first waiter's when no
// daily one waits), at most MaxBatch.
func (c *Client) take(b *batcher) []*waiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	var lead *waiter
	for _, w := range b.pending {
		if w.ctx.Err() == nil && (lead == nil || lead.opts.Priority != permit.PriorityDaily && w.opts.Priority == permit.PriorityDaily) {
			lead = w
		}
	}
	var batch []*waiter
	rest := b.pending[:0]
	for _, w := range b.pending {
		switch {
		case w.ctx.Err() != nil:
			// Gone: its caller already returned (this ends the goroutine
			// that waits to give back a late permit).
			w.res <- result{err: w.ctx.Err()}
		case w == lead || len(batch) < MaxBatch && w.opts.Delay == lead.opts.Delay && w.opts.Priority == lead.opts.Priority && w.opts.Chain == lead.opts.Chain &&
			// A windowed ask goes alone: the window bounds its one grant.
			lead.opts.NotAfter.IsZero() && w.opts.NotAfter.IsZero() && w.opts.NotBefore.Equal(lead.opts.NotBefore):
			batch = append(batch, w)
		default:
			rest = append(rest, w)
		}
	}
	b.pending = rest
	if len(batch) == 0 {
		b.running = false
	}
	return batch
}

// Fitting the tolerance to the round trips (RulesPriority only: such a
// limiter keeps each grant's own tolerance, so lowering it is safe).
const (
	// MinTolerance is the least tolerance a client fits to its round trips.
	MinTolerance = 15 * time.Millisecond
	// rttSamples is how many recent round trips the fit looks at, and
	// the fewest it needs.
	rttSamples    = 32
	rttMinSamples = 8
	// wakeMargin is what the fit keeps for the caller to wake up and send
	// after its permit's time.
	wakeMargin = 3 * time.Millisecond
)

// tolerance is the tolerance the batcher asks with, given the callers'
// configured one (--limiter-tolerance).
//
// With ClientOptions.FitTolerance, once the limiter follows RulesPriority
// (each grant keeps its own
// tolerance, so a tolerance may shrink safely), it is fitted to the recent
// round trips: 1.5 × their 75th percentile plus wakeMargin — at least
// MinTolerance (or the configured one, if lower), at most the configured
// one while the round trips allow it, and above it (up to 2 s) while they
// are slower; it follows them back down. An answer slower than the
// tolerance is released and asked for again at once; since a long run's
// slots lie up to MaxAhead ahead, the same slots come back, so a late
// answer costs an update, not throughput. A smaller tolerance spaces the
// windows closer (a window of L costs L + τ), and the permit's deadline
// shrinks with it, so every call is still sent within [grant, grant + τ].
//
// Otherwise (and with a legacy limiter) it is the configured tolerance,
// widened to slow round trips (lateAnswer) — for good with a legacy
// limiter, until they recover otherwise (narrow).
func (b *batcher) tolerance(configured time.Duration) time.Duration {
	if !b.fit || !ledger.Rules(b.rules).Priority || len(b.rtts) < rttMinSamples {
		return max(configured, b.tol)
	}
	sorted := slices.Sorted(slices.Values(b.rtts))
	p75 := sorted[len(sorted)*3/4]
	fit := p75 + p75/2 + wakeMargin
	if fit > configured {
		return min(fit, ledger.MaxTolerance)
	}
	return max(fit, min(MinTolerance, configured))
}

// RoundTrip is the median of the process's recent acquire round trips to
// a scope's limiter (0 before any).
func (c *Client) RoundTrip(scopeID string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.scopes[scopeID]
	if b == nil || len(b.rtts) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(b.rtts))
	return sorted[len(sorted)/2]
}

func (b *batcher) observe(rtt time.Duration) {
	b.rtts = append(b.rtts, rtt)
	if len(b.rtts) > rttSamples {
		b.rtts = b.rtts[len(b.rtts)-rttSamples:]
	}
}

// run serves a scope's pending waiters, one acquire update at a time.
func (c *Client) run(b *batcher) {
	backoff := initialBackoff
	for {
		batch := c.take(b)
		if len(batch) == 0 {
			return
		}
		countTrips(batch)
		req, configured := c.request(b, batch)
		sent := time.Now()
		resp, err := c.acquire(b.scope, req.Limits, req)
		received := time.Now()
		rtt := received.Sub(sent)
		c.count(func(s *ClientStats) { s.Updates++; s.MaxRTT = max(s.MaxRTT, rtt); s.Tolerance = req.Limits.Tolerance })
		if err != nil || resp.Recover {
			backoff = c.retry(b, batch, req.Release, resp, err, backoff)
			continue
		}
		backoff = initialBackoff
		c.count(func(s *ClientStats) { s.Released += int64(len(req.Release)) })
		c.answer(b, batch, req, configured, resp, received, rtt)
	}
}

const initialBackoff = 50 * time.Millisecond

// request builds the acquire update for a batch: the stricter of the
// waiters' limits at the batcher's tolerance, the shortest maximum wait,
// and the grants to give back. It also returns the waiters' configured
// tolerance.
func (c *Client) request(b *batcher, batch []*waiter) (AcquireRequest, time.Duration) {
	lim, maxWait := batch[0].limits, batch[0].opts.MaxWait
	for _, w := range batch[1:] {
		lim = ledger.Stricter(lim, w.limits)
		maxWait = min(maxWait, w.opts.MaxWait)
	}
	configured := lim.Tolerance
	c.mu.Lock()
	lim.Tolerance = b.tolerance(configured)
	release := b.release
	b.release = nil
	chain := batch[0].opts.Chain && !c.noChain && b.chainWorth(lim, lim.Tolerance)
	var lead time.Duration
	if chain {
		lead = b.roundTrips.median() + time.Millisecond
	}
	delay := batch[0].opts.Delay
	if nb := batch[0].opts.NotBefore; !nb.IsZero() && !ledger.Rules(b.rules).Window {
		// A limiter before RulesWindow (or one not heard from yet) ignores
		// the window: the start is asked for as a delay on this clock too
		// (and a grant after the window is given back: outside).
		delay = max(delay, time.Until(nb))
	}
	c.mu.Unlock()
	return AcquireRequest{N: len(batch), Limits: lim, MaxWait: maxWait, Horizon: lim.Horizon(), Delay: delay,
		Release: release, Caller: c.caller, Priority: batch[0].opts.Priority, Chain: chain, Lead: lead,
		NotBefore: batch[0].opts.NotBefore, NotAfter: batch[0].opts.NotAfter}, configured
}

// retry puts a batch back after a failed update, or one the limiter
// ignored while recovering (whose state it then recovers), and returns the
// next backoff.
func (c *Client) retry(b *batcher, batch []*waiter, release []uint64, resp AcquireResponse, err error, backoff time.Duration) time.Duration {
	// Whether the update was applied is unknown (or the limiter ignored
	// it while recovering): the releases go again, which is harmless —
	// they name grant ids.
	c.unrelease(b, release)
	c.requeue(b, batch)
	if err == nil {
		err = c.recoverScope(b, resp.RunID)
	}
	if err == nil {
		return backoff
	}
	c.log.Warn("limiter update failed; retrying", "scope", b.scope, "err", err, "backoff", backoff)
	time.Sleep(backoff)
	return min(2*backoff, 5*time.Second)
}

// answer hands out a limiter's answer: grants that arrived too late go
// back, a slot more than a minute away fails the batch with a *WaitError,
// and the rest is delivered; callers held back wait here for RetryIn.
func (c *Client) answer(b *batcher, batch []*waiter, req AcquireRequest, configured time.Duration, resp AcquireResponse, received time.Time, rtt time.Duration) {
	tol := req.Limits.Tolerance
	c.mu.Lock()
	b.rules = resp.Rules
	b.observe(rtt)
	c.mu.Unlock()
	if rtt > tol && len(resp.Grants) > 0 {
		c.lateAnswer(b, rtt, tol, configured, resp)
		c.requeue(b, batch)
		return
	}
	if rtt <= tol {
		b.late = 0
		c.narrow(b, configured)
	}
	if earliest, ok := outside(req, resp); ok {
		// No slot within the window asked for. A limiter that ignores
		// the window granted one after it: that grant goes back.
		var ids []uint64
		for _, g := range resp.Grants {
			ids = append(ids, g.ID)
		}
		c.unrelease(b, ids)
		for _, w := range batch {
			w.res <- result{err: &NotWithinError{Scope: b.scope, Earliest: earliest}}
		}
		return
	}
	if len(resp.Grants) == 0 && resp.Quota == nil && resp.RetryIn > longWait {
		for _, w := range batch {
			w.res <- result{err: &WaitError{Scope: b.scope, Wait: resp.RetryIn}}
		}
		return
	}
	c.deliver(b, batch, req, resp, received, tol-rtt)
	if len(resp.Grants) == 0 && resp.Quota == nil && resp.RetryIn > 0 {
		// No slot within MaxAhead, or a backfill yielding to daily
		// callers: the waiters wait here, not in the ledger.
		time.Sleep(min(resp.RetryIn, 30*time.Second))
	}
}

// outside reports whether an answer to a windowed request has no grant
// within the window, and the first slot then.
func outside(req AcquireRequest, resp AcquireResponse) (time.Time, bool) {
	if req.NotAfter.IsZero() {
		return time.Time{}, false
	}
	if !resp.Earliest.IsZero() {
		return resp.Earliest, true
	}
	if len(resp.Grants) > 0 && resp.Grants[0].At.After(req.NotAfter) {
		return resp.Grants[0].At, true
	}
	return time.Time{}, false
}

// narrowSamples is how many timely round trips in a row narrow a widened
// tolerance again.
const narrowSamples = 8

// narrow undoes a widening (lateAnswer) once the round trips have
// recovered: twice the slowest of the last narrowSamples, or the
// configured tolerance when that covers it. Only under RulesPriority and
// later, whose grants each keep their own caller's tolerance: a legacy
// limiter spaces every grant by the widest tolerance any caller asked
// with, which must then never shrink.
func (c *Client) narrow(b *batcher, configured time.Duration) {
	c.mu.Lock()
	if b.tol <= configured || !ledger.Rules(b.rules).Priority || len(b.rtts) < narrowSamples {
		c.mu.Unlock()
		return
	}
	slowest := slices.Max(b.rtts[len(b.rtts)-narrowSamples:])
	was := b.tol
	switch want := 2 * slowest; {
	case want <= configured:
		b.tol = 0
	case want < b.tol:
		b.tol = want
	}
	now := max(b.tol, configured)
	c.mu.Unlock()
	if now < was {
		c.log.Info("limiter round trips recovered; narrowing the tolerance", "scope", b.scope,
			"slowest_recent_rtt", slowest, "tolerance", configured, "widened_to", was, "narrowed_to", now)
	}
}

// lateAnswer handles an answer that took longer than the tolerance: its
// grants could be used late, so they are given back and asked for again.
// Round trips this slow, again and again, would never yield a usable
// grant: after three, the process widens its tolerance to twice the round
// trip (grants are spaced further apart), until they recover (narrow).
// A round trip slower than a fitted tolerance only raises the fit (it is
// among the recent round trips); widening is for the configured one.
func (c *Client) lateAnswer(b *batcher, rtt, tol, configured time.Duration, resp AcquireResponse) {
	if rtt > configured {
		b.late++
	}
	if b.late >= 3 && b.tol < ledger.MaxTolerance {
		c.mu.Lock()
		b.tol = min(2*rtt, ledger.MaxTolerance)
		c.mu.Unlock()
		// Info, not a warning: the client adapts by itself, and the
		// calls go on (the dev console shows warnings).
		c.log.Info("limiter round trips exceed the tolerance; widening it", "scope", b.scope,
			"rtt", rtt, "tolerance", configured, "widened_to", b.tol, "hint", "raise --limiter-tolerance")
		b.late = 0
	}
	c.count(func(s *ClientStats) { s.LateBatch++ })
	c.log.Debug("limiter answer slower than tolerance; releasing its grants and asking again", "scope", b.scope, "rtt", rtt, "tolerance", tol)
	ids := make([]uint64, len(resp.Grants))
	for i, g := range resp.Grants {
		ids[i] = g.ID
	}
	c.unrelease(b, ids)
}

// deliver hands the answer's grants to the batch's waiters in order; the
// rest get the quota error, or wait for the next round.
func (c *Client) deliver(b *batcher, batch []*waiter, req AcquireRequest, resp AcquireResponse, received time.Time, slack time.Duration) {
	tracked := batch[0].opts.Chain
	// Count before handing out, so a caller that reads Stats after its
	// permit sees it counted.
	n := min(len(batch), len(resp.Grants), len(resp.Waits))
	c.count(func(s *ClientStats) { s.Granted += int64(n) })
	permits := make([]Permit, n)
	for i := range permits {
		at := received.Add(resp.Waits[i])
		permits[i] = Permit{Scope: b.scope, GrantID: resp.Grants[i].ID, SendAt: at, Deadline: at.Add(slack), client: c,
			At: resp.Grants[i].At, Until: resp.Grants[i].At.Add(req.Limits.Tolerance)}
		if i < len(resp.Links) {
			permits[i].Links = resp.Links[i]
		}
		if i < len(resp.Ahead) && resp.Ahead[i] > 0 {
			permits[i].Early = at.Add(-resp.Ahead[i])
		}
	}
	if tracked && ledger.Rules(resp.Rules).Chain {
		// A grant of a chained answer is named by links only if the
		// ledger chained it: one that took over a given-back slot
		// (RulesRefill) is counted at its latest send, like another
		// caller's.
		chained := make([]bool, n)
		for i := range chained {
			chained[i] = req.Chain && resp.Grants[i].Chain != 0
		}
		c.recordSends(b, permits, chained, received)
	}
	var again []*waiter
	for i, w := range batch {
		switch {
		case i < n:
			w.res <- result{permit: permits[i]}
		case resp.Quota != nil:
			w.res <- result{err: &QuotaError{Scope: b.scope, QuotaExhausted: *resp.Quota}}
		default:
			// Held back by the horizon or MaxAhead: next round.
			again = append(again, w)
		}
	}
	if len(again) > 0 {
		c.requeue(b, again)
	}
}

func (c *Client) unrelease(b *batcher, ids []uint64) {
	if len(ids) == 0 {
		return
	}
	c.mu.Lock()
	b.release = append(b.release, ids...)
	c.mu.Unlock()
}

func (c *Client) requeue(b *batcher, batch []*waiter) {
	c.mu.Lock()
	b.pending = append(batch, b.pending...)
	c.mu.Unlock()
}

// Warm starts a scope's limiter if it is not running, and has it recover
// the state of the run before it if it must, so that the first acquire
// pays for neither.
func (c *Client) Warm(ctx context.Context, scopeID string, lim ledger.Limits) error {
	if err := lim.Validate(); err != nil {
		return fmt.Errorf("warming limiter %s: %w", scopeID, err)
	}
	h, err := c.tc.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: c.startOp(scopeID, lim),
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID:   WorkflowID(scopeID),
			UpdateName:   PingUpdate,
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return fmt.Errorf("warming limiter %s: %w", scopeID, err)
	}
	var s State
	if err := h.Get(ctx, &s); err != nil {
		return fmt.Errorf("warming limiter %s: %w", scopeID, err)
	}
	if s.Recovering {
		c.mu.Lock()
		b := c.batcher(scopeID)
		c.mu.Unlock()
		if err := c.recoverScope(b, s.RunID); err != nil {
			return fmt.Errorf("warming limiter %s: %w", scopeID, err)
		}
	}
	return nil
}

func (c *Client) startOp(scopeID string, lim ledger.Limits) client.WithStartWorkflowOperation {
	return c.tc.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       WorkflowID(scopeID),
		TaskQueue:                c.taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes:    kind.Of(kind.Limiter),
	}, WorkflowName, LimiterInput{ScopeID: scopeID, Protocol: LimiterProtocol, Limits: lim})
}

func (c *Client) acquire(scopeID string, lim ledger.Limits, req AcquireRequest) (AcquireResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var resp AcquireResponse
	if err := c.updateWithStart(ctx, scopeID, lim, AcquireUpdate, req, &resp); err != nil {
		return AcquireResponse{}, fmt.Errorf("acquiring %d permits for %s: %w", req.N, scopeID, err)
	}
	return resp, nil
}

func (c *Client) updateWithStart(ctx context.Context, scopeID string, lim ledger.Limits, name string, arg, out any) error {
	h, err := c.tc.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: c.startOp(scopeID, lim),
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID:   WorkflowID(scopeID),
			UpdateName:   name,
			Args:         []any{arg},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return err
	}
	return h.Get(ctx, out)
}

// Penalize tells a scope's limiter that the provider answered with its
// rate-limit error: a confirmed rejection lowers the scope's rate and
// holds grants back for the provider's wait (see Ledger.Penalize).
func (c *Client) Penalize(ctx context.Context, scopeID string, lim ledger.Limits, req PenalizeRequest) (PenalizeResponse, error) {
	req.Caller = c.caller
	var resp PenalizeResponse
	if err := c.updateWithStart(ctx, scopeID, lim, PenalizeUpdate, req, &resp); err != nil {
		return PenalizeResponse{}, fmt.Errorf("penalizing %s: %w", scopeID, err)
	}
	return resp, nil
}

// Reconfigure sets a scope's operator limits (nil clears them) through
// the reconfigure update, starting the limiter if needed; the ledger keeps
// its history and day counts.
func (c *Client) Reconfigure(ctx context.Context, scopeID string, lim *ledger.Limits, reason string) (State, error) {
	start := ledger.Limits{Tolerance: ledger.DefaultTolerance}
	if lim != nil {
		if err := lim.Validate(); err != nil {
			return State{}, fmt.Errorf("reconfiguring %s: %w", scopeID, err)
		}
		start = *lim
	}
	var s State
	if err := c.updateWithStart(ctx, scopeID, start, ReconfigureUpdate, ReconfigureRequest{Limits: lim, Reason: reason, Caller: c.caller}, &s); err != nil {
		return State{}, fmt.Errorf("reconfiguring %s: %w", scopeID, err)
	}
	return s, nil
}

// State queries a scope's limiter (its current run).
func (c *Client) State(ctx context.Context, scopeID string) (State, error) {
	return c.stateOf(ctx, WorkflowID(scopeID), "")
}

func (c *Client) stateOf(ctx context.Context, workflowID, runID string) (State, error) {
	v, err := c.tc.QueryWorkflow(ctx, workflowID, runID, StateQuery)
	if err != nil {
		return State{}, fmt.Errorf("querying limiter %s: %w", workflowID, err)
	}
	var s State
	if err := v.Get(&s); err != nil {
		return State{}, fmt.Errorf("decoding limiter %s state: %w", workflowID, err)
	}
	return s, nil
}
