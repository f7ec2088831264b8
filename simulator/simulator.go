package simulator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/registry"
)

// Options configure a Simulator.
type Options struct {
	// Registry declares the providers, datasets and limits to serve and
	// enforce. Required.
	Registry *registry.Registry
	// RateScale multiplies every rate: a window of length L allows its
	// count per L/RateScale, minimum intervals, KIS's token interval and
	// UPBIT block times are divided by it. Daily quotas are calendar days
	// and are not scaled. 0 means 1.
	RateScale float64
	// Seed makes synthetic data and fault dice reproducible.
	Seed int64
	// Credentials maps a credential environment variable name to the one
	// value the simulator accepts for it; nil means TestCredentials(Registry).
	Credentials map[string]string
	// Now is the clock for limits, quotas, tokens and data availability;
	// nil means time.Now.
	Now func() time.Time
	// Logger receives one debug line per request (never a key or token);
	// nil discards.
	Logger *slog.Logger
	// Faults are the faults injected from the start (see SetFaults).
	Faults []Fault
	// Sleep waits for injected latency and slow bodies; nil means a real
	// timer that stops when ctx ends. Tests may pass a recorder.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Simulator serves the providers of the registry — by connector: KIS,
// ECOS, FRED, UPBIT and data.go.kr with simulator/all linked — at their
// real paths, with their real envelopes and errors, synthetic
// deterministic data, the declared limits enforced per scope instance and
// injectable faults. It is safe for concurrent use.
type Simulator struct {
	reg   *registry.Registry
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	log   *slog.Logger
	scale float64
	seed  int64
	creds map[string]string

	provs  []*Instance
	byID   map[string]*Instance
	byConn map[string][]*Instance
	served []servedProvider // in connector-name order

	scopes    []*Scope // sorted by id
	scopeByID map[string]*Scope

	faults atomic.Pointer[faultSet]
	rngMu  sync.Mutex
	rng    *rand.Rand

	// mu guards the scope states and the providers' own states (see
	// Host.Locked).
	mu sync.Mutex

	srvMu   sync.Mutex
	srv     *http.Server
	ln      net.Listener
	baseURL string
	done    chan struct{}
}

type provCounters struct {
	requests, authFailures                               atomic.Int64
	down, errors, resets, delayed, slowed, truncated, at atomic.Int64
	shaped                                               atomic.Int64
}

// faultSet is the injected faults with, per fault, how many requests its
// Shape answered (Fault.Times).
type faultSet struct {
	faults []Fault
	shaped []atomic.Int64
}

func newFaultSet(faults []Fault) *faultSet {
	return &faultSet{faults: append([]Fault(nil), faults...), shaped: make([]atomic.Int64, len(faults))}
}

// New builds a simulator from opts.
func New(opts Options) (*Simulator, error) {
	if opts.Registry == nil {
		return nil, errors.New("creating simulator: Options.Registry is nil")
	}
	scale := opts.RateScale
	if scale == 0 {
		scale = 1
	}
	if scale < 0 || math.IsNaN(scale) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("creating simulator: rate scale %v must be a positive finite number", opts.RateScale)
	}
	if err := checkFaults(opts.Registry, opts.Faults); err != nil {
		return nil, fmt.Errorf("creating simulator: %w", err)
	}
	s := &Simulator{
		reg:       opts.Registry,
		now:       opts.Now,
		sleep:     opts.Sleep,
		log:       opts.Logger,
		scale:     scale,
		seed:      opts.Seed,
		creds:     opts.Credentials,
		byID:      map[string]*Instance{},
		byConn:    map[string][]*Instance{},
		scopeByID: map[string]*Scope{},
		rng:       rand.New(rand.NewPCG(uint64(opts.Seed), 0x5111ce)),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.sleep == nil {
		s.sleep = realSleep
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.creds == nil {
		s.creds = TestCredentials(opts.Registry)
	}
	s.faults.Store(newFaultSet(opts.Faults))

	for _, inst := range opts.Registry.Scopes {
		st := newScopeState(inst, scale)
		s.scopes = append(s.scopes, st)
		s.scopeByID[st.id] = st
	}
	sort.Slice(s.scopes, func(i, j int) bool { return s.scopes[i].id < s.scopes[j].id })

	for _, p := range opts.Registry.Providers {
		ps := &Instance{p: p, conn: connectorOf(p), creds: map[string]string{}, byScope: map[string]*Scope{}}
		if u, err := url.Parse(p.BaseURL); err == nil && p.BaseURL != "" {
			ps.prefix = strings.TrimRight(u.Path, "/")
		}
		for _, role := range p.Auth.Roles() {
			ps.creds[role] = s.creds[p.Auth.Credentials[role]]
		}
		for _, rl := range p.RateLimits {
			if rl.Scope == registry.ScopeService {
				continue
			}
			if st := s.scopeByID[p.ID+"/"+rl.Scope]; st != nil {
				ps.scopes = append(ps.scopes, st)
				ps.byScope[rl.Scope] = st
			}
		}
		ps.tokenScope = ps.byScope[registry.ScopeKey]
		if ps.tokenScope == nil && len(ps.scopes) > 0 {
			ps.tokenScope = ps.scopes[0]
		}
		s.provs = append(s.provs, ps)
		s.byID[p.ID] = ps
		s.byConn[ps.conn] = append(s.byConn[ps.conn], ps)
	}
	if err := s.buildProviders(); err != nil {
		return nil, fmt.Errorf("creating simulator: %w", err)
	}
	for _, f := range opts.Faults {
		if err := s.checkShape(f); err != nil {
			return nil, fmt.Errorf("creating simulator: %w", err)
		}
	}
	return s, nil
}

func realSleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Handler returns the simulator's HTTP handler: the providers at their
// real paths and the control API under /_sim/.
func (s *Simulator) Handler() http.Handler { return s }

// RateScale returns the factor every rate is multiplied by.
func (s *Simulator) RateScale() float64 { return s.scale }

// Credentials returns the accepted credential values by environment
// variable name (a copy).
func (s *Simulator) Credentials() map[string]string {
	out := make(map[string]string, len(s.creds))
	for k, v := range s.creds {
		out[k] = v
	}
	return out
}

// SetFaults replaces the injected faults. It rejects them all, changing
// nothing, when one is invalid or names a provider or dataset the
// registry does not declare (see New).
func (s *Simulator) SetFaults(faults []Fault) error {
	if err := checkFaults(s.reg, faults); err != nil {
		return err
	}
	for _, f := range faults {
		if err := s.checkShape(f); err != nil {
			return err
		}
	}
	s.faults.Store(newFaultSet(faults))
	return nil
}

// Faults returns the injected faults.
func (s *Simulator) Faults() []Fault {
	return append([]Fault(nil), s.faults.Load().faults...)
}

// Reset clears every scope's windows, quotas, statistics, blocks and
// token-issuance windows, the provider counters and what each provider
// clears of its own state (Provider.Reset: KIS paging cursors). Issued
// KIS tokens and used UPBIT nonces stay valid and used.
func (s *Simulator) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.scopes {
		st.resetCounters()
	}
	for _, ps := range s.provs {
		c := &ps.counters
		for _, a := range []*atomic.Int64{&c.requests, &c.authFailures, &c.down, &c.errors, &c.resets, &c.delayed, &c.slowed, &c.truncated, &c.at, &c.shaped} {
			a.Store(0)
		}
	}
	for _, sp := range s.served {
		sp.p.Reset()
	}
}

// Stats returns the same data as GET /_sim/stats.
func (s *Simulator) Stats() Stats {
	now := s.now()
	out := Stats{Time: now, RateScale: s.scale, Scopes: map[string]*ScopeStats{}, Providers: map[string]*ProviderStats{}}
	s.mu.Lock()
	for _, st := range s.scopes {
		out.Scopes[st.id] = st.snapshot(now)
	}
	s.mu.Unlock()
	for _, ps := range s.provs {
		c := &ps.counters
		out.Providers[ps.p.ID] = &ProviderStats{
			Requests:     c.requests.Load(),
			AuthFailures: c.authFailures.Load(),
			Faults: FaultStats{
				Down: c.down.Load(), Errors: c.errors.Load(), Resets: c.resets.Load(),
				Delayed: c.delayed.Load(), Slowed: c.slowed.Load(), Truncated: c.truncated.Load(),
				RejectedAtFraction: c.at.Load(), Shaped: c.shaped.Load(),
			},
		}
	}
	return out
}

// Admission is the outcome of charging a call to its scope instances.
type Admission struct {
	// OK reports that every scope accepted the call.
	OK bool
	// Reason is why a scope rejected it.
	Reason  Verdict
	scope   *Scope // the scope that rejected
	field   string // the window field or min_interval_seconds that bound
	byFault bool   // rejected only because of a RejectAtFraction fault
	t       int64  // the call's time in the first scope's clock
}

// admit charges one call to scopes (all or nothing) and decides whether
// the provider accepts it. Rejected calls do not count toward any window
// or quota; they count as violations (or as fault rejections when only a
// RejectAtFraction fault made the limit bind).
func (s *Simulator) admit(r *http.Request, ps *Instance, scopes []*Scope, fraction float64) Admission {
	if len(scopes) == 0 {
		return Admission{OK: true}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The clock is read under the lock, so call times are in the order
	// the calls are counted.
	return s.admitLocked(r, ps, scopes, fraction, s.now())
}

func (s *Simulator) admitLocked(r *http.Request, ps *Instance, scopes []*Scope, fraction float64, now time.Time) Admission {
	var tsArr [4]int64
	ts := tsArr[:0]
	a := arrivalOf(r)
	a.Stamped = now
	for _, st := range scopes {
		ts = append(ts, st.observeArrival(now, a))
	}
	reject := func(idx int, v Verdict, field string, byFault, atFraction bool) Admission {
		for i, st := range scopes {
			switch {
			case i == idx && byFault:
				st.rejectedByFault++
			case i == idx:
				st.rejected++
				st.noteViolation(v, field)
			default:
				st.rejectedElsewhere++
			}
		}
		if v == OverDaily {
			// The provider said "quota spent": every later call of the
			// day is a call against a spent quota.
			scopes[idx].told = scopes[idx].day
		}
		if atFraction {
			ps.counters.at.Add(1)
		}
		return Admission{scope: scopes[idx], Reason: v, field: field, byFault: byFault, t: ts[0]}
	}
	for i, st := range scopes {
		if v, field := st.check(ts[i], 1); v != Admitted {
			return reject(i, v, field, false, false)
		}
	}
	// A quota a Shape fault spent stays spent until local midnight, fault
	// or no fault, as the real service's does; within the declared quota,
	// so not a violation.
	for i, st := range scopes {
		if field := st.spentByFault(); field != "" {
			return reject(i, OverDaily, field, true, false)
		}
	}
	if fraction > 0 && fraction < 1 {
		for i, st := range scopes {
			if v, field := st.check(ts[i], fraction); v != Admitted {
				return reject(i, v, field, true, true)
			}
		}
	}
	for i, st := range scopes {
		st.accept(ts[i])
	}
	return Admission{OK: true, t: ts[0]}
}

// datasetScopes returns the scope instances a dataset's calls count
// against at provider ps: each of its non-service scopes and, for a
// per-service limit, the dataset's service. Without a dataset, only the
// non-service scopes.
func (s *Simulator) datasetScopes(ps *Instance, ds *registry.Dataset) []*Scope {
	out := append([]*Scope(nil), ps.scopes...)
	if ds != nil && ds.ScopeKey != "" && ps.p.ServiceScoped() {
		if st := s.scopeByID[ps.p.ID+"/"+registry.ScopeService+"/"+ds.ScopeKey]; st != nil {
			out = append(out, st)
		}
	}
	return out
}

// spendQuota charges one call that a quota-spending Shape answered (data.go.kr
// code 22) to the scopes of dataset ds at provider ps that have a daily
// quota: each counts the call (rejected by a fault, not a violation) and
// stays spent until local midnight.
func (s *Simulator) spendQuota(ps *Instance, ds *registry.Dataset) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, st := range s.datasetScopes(ps, ds) {
		field := st.dailyField()
		if field == "" {
			continue
		}
		st.observe(now)
		st.rejectedByFault++
		st.spent = st.day
		st.told = st.day
	}
}
