package ratelimit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/heartbeat"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

// Error codes of the failures the gate itself decides.
const (
	// CodeNoScope: the dataset counts against no scope instance, so no
	// permit can be held for it: the call is refused, never sent.
	CodeNoScope = "sluice-no-scope"
	// CodeQuota: the scope's declared daily quota is spent.
	CodeQuota = "sluice-quota"
	// CodeHeldBack: the scope's next slot is far away (paused after a
	// provider's wait): try later.
	CodeHeldBack = "sluice-held-back"
)

// maxLate bounds how many times in a row a call's permits may expire
// before it uses them (the process stalled past their deadlines) before
// the call fails as transient. Contention never counts here: holding the
// scopes of a call does not take rounds (Gate.hold).
const maxLate = 16

// GateOptions configure a Gate.
type GateOptions struct {
	Registry *registry.Registry // required
	Client   *Client            // required
	// RateScale multiplies every declared rate (against a simulator at the
	// same scale, see CheckScale); ≤ 0 means 1.
	RateScale float64
	// Tolerance is the limiter's send tolerance (0: DefaultTolerance).
	Tolerance time.Duration
	// MaxQuotaWait is how long a dataset may wait for a daily quota to
	// reset (QuotaWait): within one permit up to MaxAhead, beyond it in the
	// workflow.
	MaxQuotaWait time.Duration
	Events       *events.Emitter  // nil: events are only logged
	Metrics      *metrics.Metrics // nil: no metrics
	Logger       *slog.Logger     // nil: slog.Default()
	// Now is the gate's clock for a provider's spent quota (SpentQuota);
	// nil means time.Now.
	Now func() time.Time
}

// Gate is the rate-limit policy of one worker process, plugged into every
// connector as its permit.Limiter (connector.Options.Limiter): before a
// data call it holds a permit of every scope instance the call counts
// against, at one common moment; after the call it reports what the
// provider said — a rejection to the scopes' limiters, Remaining-Req to
// the metrics, an operational event for every backoff and every exhausted
// quota. Token calls are paced by the token store, not here. Safe for
// concurrent use.
type Gate struct {
	reg          *registry.Registry
	client       *Client
	limits       map[string]ledger.Limits
	maxQuotaWait time.Duration
	events       *events.Emitter
	metrics      *metrics.Metrics
	log          *slog.Logger
	now          func() time.Time
	// spent holds the scopes whose quota the provider itself said is used
	// up (a QuotaExhausted answer such as data.go.kr's code 22), until it
	// resets: no call is sent against them before then.
	spentMu sync.Mutex
	spent   map[string]spentQuota
	trips   *TripCounts // limiter round trips per call (trips.go)
}

// The Gate is a connector's permit.Limiter.
var _ permit.Limiter = (*Gate)(nil)

// spentQuota is a provider's own word that a scope's quota is used up.
type spentQuota struct {
	resetAt time.Time
	code    string // the provider's code, e.g. "22"
}

// NewGate builds the gate and the limits of every scope instance at the
// rate scale; a scaled limit that no longer makes sense (a window or
// interval rounded to nothing) is an error.
func NewGate(o GateOptions) (*Gate, error) {
	if o.Registry == nil || o.Client == nil {
		return nil, errors.New("creating rate-limit gate: registry and limiter client are required")
	}
	tol := o.Tolerance
	if tol <= 0 {
		tol = ledger.DefaultTolerance
	}
	g := &Gate{reg: o.Registry, client: o.Client, limits: map[string]ledger.Limits{}, maxQuotaWait: max(o.MaxQuotaWait, 0),
		events: o.Events, metrics: o.Metrics, log: o.Logger, now: o.Now, spent: map[string]spentQuota{}, trips: newTripCounts(o.Metrics)}
	if g.now == nil {
		g.now = time.Now
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	for _, s := range o.Registry.Scopes {
		lim := ledger.FromScope(s, o.RateScale, tol)
		if err := lim.Validate(); err != nil {
			return nil, fmt.Errorf("creating rate-limit gate: scope %s at rate scale %g: %w", s.ID, o.RateScale, err)
		}
		if s.Limit.MinInterval > 0 && lim.MinInterval <= 0 {
			return nil, fmt.Errorf("creating rate-limit gate: scope %s: min interval %s vanishes at rate scale %g", s.ID, s.Limit.MinInterval, o.RateScale)
		}
		if lim.DailyQuota > 0 {
			// Backfills get what the day's scheduled ingests and probes
			// (with their headroom) leave of the quota.
			lim.Reserved = min(s.Demand(o.Registry.Defaults.ProbeHeadroom).Total, lim.DailyQuota)
		}
		g.limits[s.ID] = lim
	}
	return g, nil
}

// Limits returns the limits the gate asks a scope instance's limiter for.
func (g *Gate) Limits(scopeID string) ledger.Limits { return g.limits[scopeID] }

// MaxQuotaWait is how long a dataset may wait for a quota reset (0 for a
// nil gate).
func (g *Gate) MaxQuotaWait() time.Duration {
	if g == nil {
		return 0
	}
	return g.maxQuotaWait
}

// Warm starts the limiter of every scope instance that has datasets (and
// has it recover its last state), so the first calls of a batch wait for
// neither.
func (g *Gate) Warm(ctx context.Context) error {
	var errs []error
	for _, s := range g.reg.Scopes {
		if len(s.Datasets) == 0 {
			continue
		}
		if err := g.client.Warm(ctx, s.ID, g.limits[s.ID]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// tracker carries the grants of a call from Wait to Observe.
type tracker struct {
	mu     sync.Mutex
	grants map[string]uint64 // scope → grant id of the last data call
}

type trackerKey struct{}

// Track returns a context whose calls the gate follows from permit to
// answer, so that a rejection names the grant it answers (Penalty.GrantID:
// a confirmed rejection, or one of a call already in flight). Activities
// call it once before a fetch or probe; calls made without it are
// penalized without a grant id.
func Track(ctx context.Context) context.Context {
	return context.WithValue(ctx, trackerKey{}, &tracker{grants: map[string]uint64{}})
}

func trackerOf(ctx context.Context) *tracker {
	t, _ := ctx.Value(trackerKey{}).(*tracker)
	return t
}

// Wait is permit.Limiter.Wait: it returns when the call may be sent,
// holding a permit of every scope instance the call counts against, with
// the earliest of their deadlines: the connector checks it again once its
// connection is ready and asks again when the request would leave late. A
// data call whose dataset has no scope is refused (BadRequest, never
// retried): no call leaves without a permit. Token calls are paced by the
// token store (once a minute per app key), not here.
func (g *Gate) Wait(ctx context.Context, call permit.Call) (permit.Permit, error) {
	if call.Kind != permit.CallData {
		return permit.Permit{}, nil
	}
	scopes := g.reg.ScopesFor(call.Dataset)
	if len(scopes) == 0 {
		return permit.Permit{}, &connector.Error{Class: connector.BadRequest, Provider: call.Provider, Dataset: call.Dataset, Code: CodeNoScope,
			Message: "the dataset counts against no rate-limit scope of the registry, so no permit can be held for it: the call is refused"}
	}
	if e := g.spentError(call, scopes); e != nil {
		return permit.Permit{}, e
	}
	// A call waiting for its permits keeps its activity alive.
	stop := heartbeat.Every(ctx, time.Second)
	defer stop()
	start := time.Now()
	permits, err := g.hold(ctx, scopes, call.Priority, call.Tracks)
	if err != nil {
		var q *QuotaError
		if errors.As(err, &q) {
			msg := fmt.Sprintf("declared daily quota of %d calls used up until %s", q.Quota, q.ResetAt.Format(time.RFC3339))
			if q.Backfill {
				msg = fmt.Sprintf("the backfill share of the daily quota (%d calls after the reserved daily demand) used up until %s", q.Quota, q.ResetAt.Format(time.RFC3339))
			}
			g.emit(ctx, events.Event{Kind: events.KindQuotaExhausted, Scope: q.Scope, Provider: call.Provider, Dataset: call.Dataset, Message: msg})
			return permit.Permit{}, &connector.Error{Class: connector.QuotaExhausted, Provider: call.Provider, Dataset: call.Dataset,
				Code: CodeQuota, Message: q.Error(), ResetAt: q.ResetAt}
		}
		var w *WaitError
		if errors.As(err, &w) {
			return permit.Permit{}, &connector.Error{Class: connector.RateLimited, Provider: call.Provider, Dataset: call.Dataset,
				Code: CodeHeldBack, Message: w.Error(), RetryAfter: w.Wait}
		}
		var ce *connector.Error
		if errors.As(err, &ce) && ce.Provider == "" {
			// hold knows the scopes, not the call: the error names it.
			named := *ce
			named.Provider, named.Dataset = call.Provider, call.Dataset
			return permit.Permit{}, &named
		}
		return permit.Permit{}, err
	}
	if e := g.spentError(call, scopes); e != nil {
		// The provider said the quota is spent while this call waited.
		g.client.Release(permits...)
		return permit.Permit{}, e
	}
	waited := time.Since(start)
	t := trackerOf(ctx)
	if t != nil {
		t.mu.Lock()
	}
	for _, p := range permits {
		g.metrics.Wait(p.Scope, waited)
		if t != nil {
			t.grants[p.Scope] = p.GrantID
		}
	}
	if t != nil {
		t.mu.Unlock()
	}
	grant := permit.Permit{Track: spentGuard{SendTracker: g.client.Track(permits), g: g, call: call, scopes: scopes}}
	for _, p := range permits {
		if grant.Deadline.IsZero() || p.Deadline.Before(grant.Deadline) {
			grant.Deadline = p.Deadline
		}
	}
	return grant, nil
}

// hold acquires a permit of every scope and returns once all of them allow
// the call at one moment.
//
// The limiters are separate workflows, so no one decision covers all the
// scopes; instead they are held in one canonical order (by scope id), each
// asked for a grant within the window its permits before it leave — no
// earlier than the latest of their grants, no later than the earliest of
// their ends (on the limiters' clock, less the round trips that turn it
// into this process's) — or for nothing (AcquireOptions.NotAfter). So a
// set, once held, overlaps by construction. The first scope is asked its
// lead ahead (Gate.lead: the set's round trips), so that the later
// limiters, deciding after its answer came back and their asks went out,
// still find its grant's instant ahead of them. A scope with no slot in the
// window hands nothing out and names its first slot; the permits held are
// given back (released by id: the slots go to other callers) and the
// order starts again from that slot. Such a miss means another call took
// the slot — the last scope's grants only go to calls that then hold
// their whole set — so callers contending for the same scopes never hold
// one another back for good, and no bound on rounds is needed. With one
// scope this is acquire, wait, send.
//
// A set held but missed by this process — it stalled past a deadline
// (ErrLate) — is given back and held again, up to maxLate times in a row.
func (g *Gate) hold(ctx context.Context, scopes []*registry.ScopeInstance, prio permit.Priority, chain bool) ([]Permit, error) {
	order := make([]int, len(scopes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(g.limits[scopes[b].ID].Spacing(), g.limits[scopes[a].ID].Spacing()); c != 0 {
			return c
		}
		return strings.Compare(scopes[a].ID, scopes[b].ID)
	})
	held := make([]Permit, len(scopes))
	var trips atomic.Int64
	defer func() { g.trips.observe(int(trips.Load())) }()
	var from time.Time // the limiters' clock: no grant before it
	for late := 0; ; {
		n, err := g.holdFrom(ctx, scopes, order, held, from, prio, chain, &trips)
		if err != nil {
			g.client.Release(heldOnly(held, order[:n])...)
			var nw *NotWithinError
			if errors.As(err, &nw) {
				from = nw.Earliest
				continue
			}
			return nil, err
		}
		err = g.client.Ready(ctx, held)
		if err == nil {
			return held, nil
		}
		g.client.Release(held...)
		if !errors.Is(err, ErrLate) {
			return nil, err
		}
		// Late (the process stalled): give all back, start over.
		if late++; late >= maxLate {
			return nil, &connector.Error{Class: connector.Transient, Message: fmt.Sprintf("the permits of %s expired before use %d times in a row (the process stalled past the limiter tolerance; it retries)", scopeIDs(scopes), maxLate)}
		}
		from = time.Time{}
	}
}

// holdFrom asks the scopes in order for one grant each, every one within
// the window the grants before it leave, the first no earlier than from.
// It returns how many of order it holds (in held) and a *NotWithinError
// when a scope has no slot in its window; trips counts its acquires'
// round trips.
func (g *Gate) holdFrom(ctx context.Context, scopes []*registry.ScopeInstance, order []int, held []Permit, from time.Time, prio permit.Priority, chain bool, trips *atomic.Int64) (int, error) {
	notBefore, notAfter := from, time.Time{}
	lead := g.lead(scopes, order)
	for n, i := range order {
		s := scopes[i]
		opts := AcquireOptions{MaxWait: g.maxQuotaWait, Priority: prio, Chain: chain, NotBefore: notBefore, trips: trips}
		if n == 0 {
			opts.Delay = lead
		} else {
			// The permit's round trip turns the limiter's instant into this
			// process's clock at most that much later.
			opts.NotAfter = notAfter.Add(-g.client.RoundTrip(s.ID))
			if opts.NotAfter.Before(notBefore) {
				opts.NotAfter = notBefore
			}
		}
		p, err := g.client.Acquire(ctx, s.ID, g.limits[s.ID], opts)
		if err != nil {
			var q *QuotaError
			var w *WaitError
			var nw *NotWithinError
			if !errors.As(err, &q) && !errors.As(err, &w) && !errors.As(err, &nw) {
				err = fmt.Errorf("waiting for a permit of %s: %w", s.ID, err)
			}
			return n, err
		}
		held[i] = p
		if p.At.After(notBefore) {
			notBefore = p.At
		}
		// The end of the permit's window on the limiters' clock, less what
		// its own round trip took off its deadline.
		end := p.At.Add(p.Deadline.Sub(p.SendAt))
		if notAfter.IsZero() || end.Before(notAfter) {
			notAfter = end
		}
	}
	return len(order), nil
}

// lead is how far ahead of its limiter's now the first scope of a set is
// asked (AcquireOptions.Delay): the sum of the process's median round
// trips to the limiters of every scope of the set, rounded up to a
// millisecond, at most ledger.MaxAhead (a ledger grants nothing further
// ahead); none for a call of one scope.
//
// A later scope's limiter grants nothing before its own now, which comes
// the first answer's way back and the next ask's way out — and so on
// along the order — after the first grant was decided; and its window
// closes the round trips before the first grant's end, so with round
// trips of a tolerance's size its window is the first grant's instant
// alone (holdFrom). Asked without a lead, the first grant lies at its
// limiter's now, the later limiter's now is always past it, and the set
// is never held however often it is asked (measured: 43–83 asks of each
// scope in 5 s, answers 22–40 ms on their way back, τ 50 ms). Asked a
// lead ahead that covers those ways, the first grant still lies ahead of
// every later limiter's now, each of them can grant at the first grant's
// instant, and a lone call holds its set at its first ask with known round
// trips. The sum of whole round trips is more than the ways it must cover
// (each way is part of a round trip), so a median's worth of variation is
// covered too; what it costs is the lead itself, once per call of several
// scopes.
//
// What is left: a lead is capped at MaxAhead, so once the first answer's
// way back and the later asks' ways out take longer than MaxAhead plus the
// later scopes' windows (round trips of seconds), a call of several
// scopes is not held until they recover.
func (g *Gate) lead(scopes []*registry.ScopeInstance, order []int) time.Duration {
	if len(order) < 2 {
		return 0
	}
	var lead time.Duration
	for _, i := range order {
		lead += g.client.RoundTrip(scopes[i].ID)
	}
	// Rounded, so that callers of the same scopes in this process ask
	// alike and share the first scope's update.
	return min((lead + time.Millisecond - 1).Truncate(time.Millisecond), ledger.MaxAhead)
}

// heldOnly returns the permits of held at the indexes idx.
func heldOnly(held []Permit, idx []int) []Permit {
	var out []Permit
	for _, i := range idx {
		if p := held[i]; p.GrantID != 0 {
			out = append(out, p)
		}
	}
	return out
}

// Observe is permit.Limiter.Observe: it counts the call, exports what
// the provider says is left of its budget, and when the provider rejected
// a call the limiter had granted — the declaration was wrong — penalizes
// each of the call's scopes and records a ratelimit.backoff event.
func (g *Gate) Observe(ctx context.Context, o permit.Observation) {
	call := o.Call
	if call.Kind != permit.CallData {
		return
	}
	if r := o.Remaining; r != nil {
		g.metrics.RemainingRequests(call.Provider, r.Group, r.Left)
	}
	outcome := "ok"
	class, classified := connector.ClassOf(o.Err)
	if classified {
		outcome = class.String()
	} else if o.Err != nil {
		outcome = "error"
	}
	scopes := g.reg.ScopesFor(call.Dataset)
	for _, s := range scopes {
		g.metrics.Call(call.Provider, s.ID, outcome)
	}
	if classified && class == connector.QuotaExhausted {
		g.quotaSpent(ctx, call, scopes, o.Err)
		return
	}
	if !classified || (class != connector.RateLimited && class != connector.Blocked) {
		return
	}
	var ce *connector.Error
	errors.As(o.Err, &ce)
	pen := ledger.Penalty{RetryAfter: ce.RetryAfter, Block: class == connector.Blocked}
	if pen.Block && !ce.Until.IsZero() {
		pen.RetryAfter = time.Until(ce.Until)
	}
	pen.RetryAfter = min(max(pen.RetryAfter, 0), ledger.MaxPause)
	var grants map[string]uint64
	if t := trackerOf(ctx); t != nil {
		t.mu.Lock()
		grants = maps.Clone(t.grants)
		t.mu.Unlock()
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, s := range scopes {
		p := pen
		p.GrantID = grants[s.ID]
		res, err := g.client.Penalize(pctx, s.ID, g.limits[s.ID], PenalizeRequest{Penalty: p, Reason: ce.Code})
		if err != nil {
			g.log.Error("backing off scope", "scope", s.ID, "err", err)
			continue
		}
		g.metrics.Backoff(s.ID, res.Factor)
		what := fmt.Sprintf("rate lowered from %.3g× to %.3g× of the declaration", res.Previous, res.Factor)
		if !res.Confirmed {
			what = fmt.Sprintf("an answer to a call granted before the last decrease: counted, rate stays %.3g× of the declaration", res.Factor)
		}
		g.emit(pctx, events.Event{
			Kind: events.KindBackoff, Scope: s.ID, Provider: call.Provider, Dataset: call.Dataset,
			Message: fmt.Sprintf("provider answered %s (%s) within the declared limits: %s", class, ce.Code, what),
			Attrs: map[string]string{
				"declared":    describeLimits(g.limits[s.ID]),
				"observed":    fmt.Sprintf("%s %s at HTTP %d", class, ce.Code, o.Status),
				"factor":      fmt.Sprintf("%.4g", res.Factor),
				"confirmed":   fmt.Sprint(res.Confirmed),
				"retry_after": p.RetryAfter.String(),
				"pause":       res.Pause.String(),
			},
		})
	}
}

// quotaSpent remembers a provider's own QuotaExhausted answer: the call's
// scopes that declare a daily quota (all of its scopes when none does) are
// spent until the answer's reset, and every later call against them is
// refused before it is sent (spentError) — a quota that resets at
// midnight is never called against again that day. The gate's own quota
// refusals (CodeQuota) and answers without a reset are not remembered.
// The memory is this process's: another worker learns it from its own
// first refused call.
func (g *Gate) quotaSpent(ctx context.Context, call permit.Call, scopes []*registry.ScopeInstance, err error) {
	var ce *connector.Error
	if !errors.As(err, &ce) || ce.Code == CodeQuota || ce.ResetAt.IsZero() || !ce.ResetAt.After(g.now()) {
		return
	}
	var quota []*registry.ScopeInstance
	for _, s := range scopes {
		if g.limits[s.ID].DailyQuota > 0 {
			quota = append(quota, s)
		}
	}
	if len(quota) == 0 {
		quota = scopes
	}
	g.spentMu.Lock()
	var fresh []string
	for _, s := range quota {
		if cur, ok := g.spent[s.ID]; !ok || cur.resetAt.Before(ce.ResetAt) {
			g.spent[s.ID] = spentQuota{resetAt: ce.ResetAt, code: ce.Code}
			fresh = append(fresh, s.ID)
		}
	}
	g.spentMu.Unlock()
	for _, id := range fresh {
		g.emit(ctx, events.Event{Kind: events.KindQuotaExhausted, Scope: id, Provider: call.Provider, Dataset: call.Dataset,
			Message: fmt.Sprintf("provider answered quota exhausted (%s): %s; no call is sent against scope %s until %s",
				ce.Code, ce.Message, id, ce.ResetAt.Format(time.RFC3339)),
			Attrs: map[string]string{"code": ce.Code, "status": fmt.Sprint(ce.Status), "reset_at": ce.ResetAt.Format(time.RFC3339)}})
	}
}

// spentError is the refusal of a call against a scope whose quota the
// provider said is spent (quotaSpent), or nil.
func (g *Gate) spentError(call permit.Call, scopes []*registry.ScopeInstance) *connector.Error {
	now := g.now()
	g.spentMu.Lock()
	defer g.spentMu.Unlock()
	for _, s := range scopes {
		q, ok := g.spent[s.ID]
		if !ok {
			continue
		}
		if !q.resetAt.After(now) {
			delete(g.spent, s.ID)
			continue
		}
		return &connector.Error{Class: connector.QuotaExhausted, Provider: call.Provider, Dataset: call.Dataset, Code: CodeQuota,
			Message: fmt.Sprintf("the provider said the daily quota of scope %s is used up (code %s) until %s: the call is not sent",
				s.ID, q.code, q.resetAt.Format(time.RFC3339)), ResetAt: q.resetAt}
	}
	return nil
}

// spentGuard is a permit's tracker that also refuses to let the request
// leave once the provider has said one of its scopes' quota is spent
// (quotaSpent): a call granted before an earlier call's code 22 arrived
// asks the gate again at its last check, and the gate refuses it. Its
// slot counts as used.
type spentGuard struct {
	permit.SendTracker
	g      *Gate
	call   permit.Call
	scopes []*registry.ScopeInstance
}

// Leave is the inner tracker's last check, then the spent quotas'.
func (s spentGuard) Leave(now time.Time) bool {
	if !s.SendTracker.Leave(now) {
		return false
	}
	if s.g.spentError(s.call, s.scopes) != nil {
		s.SendTracker.Done(now)
		return false
	}
	return true
}

// emit records an operational event (or only logs it without an
// emitter).
func (g *Gate) emit(ctx context.Context, e events.Event) {
	if g.events == nil {
		g.log.Warn(e.Kind, "scope", e.Scope, "provider", e.Provider, "dataset", e.Dataset, "msg", e.Message)
		return
	}
	g.events.Emit(ctx, e)
}

func describeLimits(l ledger.Limits) string {
	var parts []string
	for _, w := range l.Windows {
		parts = append(parts, fmt.Sprintf("%d/%s", w.Count, w.Length))
	}
	if l.MinInterval > 0 {
		parts = append(parts, fmt.Sprintf("min-interval %s", l.MinInterval))
	}
	if l.DailyQuota > 0 {
		parts = append(parts, fmt.Sprintf("%d/day", l.DailyQuota))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// scopeIDs names scopes for a message: "kis/key", or "a, b".
func scopeIDs(scopes []*registry.ScopeInstance) string {
	ids := make([]string, len(scopes))
	for i, sc := range scopes {
		ids[i] = sc.ID
	}
	return strings.Join(ids, ", ")
}
