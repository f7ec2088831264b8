package simulator

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/registry"
)

// Provider is one simulated wire format (a registry connector: kis, ecos,
// …): it claims the requests on its paths, authenticates them, charges
// them to their scopes through its Host and answers with its provider's
// envelopes and synthetic data. A simulator builds one per connector the
// registry uses (Registration.New); its methods are called concurrently.
type Provider interface {
	// Route claims a request: which registry provider (by credentials)
	// and dataset it is for, and its handler. ok is false when the
	// request is not on one of the provider's paths. Route neither
	// authenticates nor charges.
	Route(r *http.Request) (rt Route, ok bool)
	// Reset forgets what Simulator.Reset clears of the provider's own
	// state (paging cursors, token-issuance windows: not issued tokens).
	// It is called with the simulator's state lock held (see Host.Locked).
	Reset()
}

// Controller is a Provider with control endpoints of its own, under
// /_sim/<connector>/ (KIS: expire-tokens).
type Controller interface {
	// Control serves a control request; rest is the path after
	// /_sim/<connector>. It reports false when rest is not one of its
	// endpoints.
	Control(w http.ResponseWriter, r *http.Request, rest string) bool
	// ControlPaths lists the endpoints, for banners and help.
	ControlPaths() []string
}

// Handler answers one routed request. fraction is the RejectAtFraction of
// the matching faults (0 when none): pass it on to Host.Admit.
type Handler func(r *http.Request, rt Route, fraction float64) *Reply

// Route is where a request goes.
type Route struct {
	// Instance is the registry provider the request is for.
	Instance *Instance
	// Dataset is the dataset it asks for, when the request tells; faults
	// naming a dataset match only requests routed to it.
	Dataset *registry.Dataset
	// Path is the request path without the provider's base-URL prefix.
	Path string
	// LogPath is the path as logged, secrets removed; "" logs Path.
	LogPath string
	// Serve answers the request.
	Serve Handler
}

// Registration makes a provider package known to every simulator.
type Registration struct {
	// Connector is the registry connector name the provider serves.
	Connector string
	// New builds the provider for one simulator.
	New func(h *Host) (Provider, error)
	// Credential returns the one test value the provider accepts for a
	// credential role, shaped like a real one (see TestCredentials); nil
	// or "" gives 32 letters and digits.
	Credential func(role, env string) string
}

var (
	registrationsMu sync.RWMutex
	registrations   = map[string]Registration{}
)

// Register makes a simulated provider available to New under its registry
// connector name. Provider packages call it from init (link them all with
// simulator/all); registering a name twice panics.
func Register(r Registration) {
	if r.Connector == "" || r.New == nil {
		panic("simulator: Register needs a connector name and New")
	}
	registrationsMu.Lock()
	defer registrationsMu.Unlock()
	if _, dup := registrations[r.Connector]; dup {
		panic("simulator: Register called twice for " + r.Connector)
	}
	registrations[r.Connector] = r
}

// Registered returns the registered connector names, sorted.
func Registered() []string {
	registrationsMu.RLock()
	defer registrationsMu.RUnlock()
	out := make([]string, 0, len(registrations))
	for n := range registrations {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func registration(connector string) (Registration, bool) {
	registrationsMu.RLock()
	defer registrationsMu.RUnlock()
	r, ok := registrations[connector]
	return r, ok
}

// Instance is one registry provider as the simulator serves it: its
// accepted credentials, its scope instances and its counters.
type Instance struct {
	p      *registry.Provider
	conn   string
	prefix string            // path of the declared base URL, e.g. "/1160100"
	creds  map[string]string // role → accepted value ("" = nothing accepted)
	// scopes are the provider's non-service scope instances in declared
	// order; byScope indexes them by scope name.
	scopes  []*Scope
	byScope map[string]*Scope
	// tokenScope carries token statistics (the key scope).
	tokenScope *Scope
	counters   provCounters
}

// Provider returns the registry provider.
func (in *Instance) Provider() *registry.Provider { return in.p }

// Credential returns the value accepted for a credential role ("" when
// none is).
func (in *Instance) Credential(role string) string { return in.creds[role] }

// Scope returns the provider's scope instance of a scope name (key, ip,
// account), or nil.
func (in *Instance) Scope(name string) *Scope { return in.byScope[name] }

// Scopes returns the provider's non-service scope instances in declared
// order.
func (in *Instance) Scopes() []*Scope { return in.scopes }

// TokenScope returns the scope instance that carries token-issuance
// statistics: the key scope, else the first; nil when there is none.
func (in *Instance) TokenScope() *Scope { return in.tokenScope }

// Host is a provider's access to its simulator: the registry providers
// and datasets of its connector, the clock, the seed and the scope
// bookkeeping every provider shares.
type Host struct {
	s     *Simulator
	conn  string
	insts []*Instance
	ds    []*registry.Dataset
}

// Connector returns the connector name the host serves.
func (h *Host) Connector() string { return h.conn }

// Instances returns the registry providers of the connector, in registry
// order.
func (h *Host) Instances() []*Instance { return h.insts }

// First returns the first provider of the connector (every connector a
// simulator builds has one).
func (h *Host) First() *Instance { return h.insts[0] }

// Instance returns the provider with a registry id, when it is one of the
// connector's, or nil.
func (h *Host) Instance(id string) *Instance {
	for _, in := range h.insts {
		if in.p.ID == id {
			return in
		}
	}
	return nil
}

// Owner returns the provider of the connector whose credential role
// accepts v, or nil.
func (h *Host) Owner(role, v string) *Instance {
	if v == "" {
		return nil
	}
	for _, in := range h.insts {
		if in.creds[role] == v {
			return in
		}
	}
	return nil
}

// OwnerOr returns the provider of the connector whose credential role
// accepts v (Owner), else fallback.
func (h *Host) OwnerOr(role, v string, fallback *Instance) *Instance {
	if in := h.Owner(role, v); in != nil {
		return in
	}
	return fallback
}

// Claim is the loop of a provider's Route: the route of the first of the
// request's paths (Paths) that claim takes.
func (h *Host) Claim(r *http.Request, claim func(path string) (Route, bool)) (Route, bool) {
	for _, path := range h.Paths(r.URL.Path) {
		if rt, ok := claim(path); ok {
			return rt, true
		}
	}
	return Route{}, false
}

// Stateless is embedded by a Provider that keeps nothing of its own for
// Reset to forget.
type Stateless struct{}

// Reset has nothing to forget.
func (Stateless) Reset() {}

// Datasets returns the datasets of the connector's providers, sorted by
// id.
func (h *Host) Datasets() []*registry.Dataset { return h.ds }

// Paths yields a request path as is and without each base-URL prefix of
// the connector's providers (a provider whose base URL has a path prefix
// is served with and without it).
func (h *Host) Paths(p string) []string {
	out := []string{p}
	for _, in := range h.insts {
		if in.prefix != "" && strings.HasPrefix(p, in.prefix+"/") {
			out = append(out, p[len(in.prefix):])
		}
	}
	return out
}

// Now reads the simulator's clock.
func (h *Host) Now() time.Time { return h.s.now() }

// Seed returns the seed of the synthetic data.
func (h *Host) Seed() int64 { return h.s.seed }

// RateScale returns the factor every rate is multiplied by.
func (h *Host) RateScale() float64 { return h.s.scale }

// Locked runs fn with the simulator's state lock held: the lock that
// guards every scope's bookkeeping, so a provider's own state (issued
// tokens, cursors, nonces) changes atomically with the scope it charges.
// fn must not call Admit, AdmitScopes or AdmitBlocking (they take the
// lock).
func (h *Host) Locked(fn func()) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	fn()
}

// Admit charges one call of dataset ds (nil: none known) at provider in to
// the scope instances it counts against — the provider's non-service
// scopes and, for a per-service limit, the dataset's service — all or
// nothing, and decides whether the provider accepts it.
// r is the request (nil: none), whose arrival the statistics record
// beside the call's time.
func (h *Host) Admit(r *http.Request, in *Instance, ds *registry.Dataset, fraction float64) Admission {
	return h.s.admit(r, in, h.s.datasetScopes(in, ds), fraction)
}

// AdmitScopes is Admit for an explicit list of scopes.
func (h *Host) AdmitScopes(r *http.Request, in *Instance, scopes []*Scope, fraction float64) Admission {
	return h.s.admit(r, in, scopes, fraction)
}

// newHost builds the host of one connector, or nil when the registry has
// no provider of it.
func (s *Simulator) newHost(conn string) *Host {
	h := &Host{s: s, conn: conn, insts: s.byConn[conn]}
	if len(h.insts) == 0 {
		return nil
	}
	for _, ds := range s.reg.Datasets {
		if in := s.byID[ds.Provider]; in != nil && in.conn == conn {
			h.ds = append(h.ds, ds)
		}
	}
	return h
}

// buildProviders builds a Provider for every connector of the registry
// that has a registration, in connector-name order (the order requests are
// routed in: routes of two providers must not overlap).
func (s *Simulator) buildProviders() error {
	var unserved []string
	for _, conn := range sortedConnectors(s.byConn) {
		reg, ok := registration(conn)
		if !ok {
			unserved = append(unserved, conn)
			continue
		}
		h := s.newHost(conn)
		p, err := reg.New(h)
		if err != nil {
			return fmt.Errorf("creating the %s provider: %w", conn, err)
		}
		s.served = append(s.served, servedProvider{name: conn, p: p})
	}
	if len(s.served) == 0 && len(unserved) > 0 {
		return fmt.Errorf("no simulated provider is linked for the registry's connectors (%s): import github.com/sluicehq/sluice/simulator/all",
			strings.Join(unserved, ", "))
	}
	return nil
}

func sortedConnectors(m map[string][]*Instance) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// servedProvider is a built provider with its connector name.
type servedProvider struct {
	name string
	p    Provider
}

// Provider returns the simulator's provider of a connector, or nil: for a
// provider package's own control functions (kis.ExpireTokens).
func (s *Simulator) Provider(connector string) Provider {
	for _, sp := range s.served {
		if sp.name == connector {
			return sp.p
		}
	}
	return nil
}

// Served returns the connectors the simulator serves, sorted.
func (s *Simulator) Served() []string {
	out := make([]string, 0, len(s.served))
	for _, sp := range s.served {
		out = append(out, sp.name)
	}
	return out
}

// ControlPaths lists every control endpoint: the simulator's own and its
// providers'.
func (s *Simulator) ControlPaths() []string {
	out := []string{"/_sim/stats", "/_sim/faults", "/_sim/reset"}
	for _, sp := range s.served {
		if c, ok := sp.p.(Controller); ok {
			for _, p := range c.ControlPaths() {
				out = append(out, "/_sim/"+sp.name+p)
			}
		}
	}
	return out
}

// BestDataset picks, among the candidates of registry provider prov that
// pass accept (nil = all), the one whose fixed (placeholder-free)
// parameters agree most with the query; ties go to the first by id.
func BestDataset(cands []*registry.Dataset, prov string, q url.Values, accept func(*registry.Dataset) bool) *registry.Dataset {
	var best *registry.Dataset
	bestScore := -1
	for _, ds := range cands {
		if ds.Provider != prov || (accept != nil && !accept(ds)) {
			continue
		}
		score := 0
		for _, p := range ds.Request.Params {
			if strings.Contains(p.Value, "{") {
				continue
			}
			if v, ok := q[p.Name]; ok && len(v) > 0 && v[0] == p.Value {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = ds, score
		}
	}
	return best
}

// Index groups datasets by key (a path, a stat code, a series): a
// provider's routing table.
func Index(datasets []*registry.Dataset, key func(*registry.Dataset) string) map[string][]*registry.Dataset {
	out := map[string][]*registry.Dataset{}
	for _, ds := range datasets {
		k := key(ds)
		out[k] = append(out[k], ds)
	}
	return out
}
