package connector

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/wire"
)

// Connector speaks one provider's wire format.
type Connector interface {
	// Fetch builds, signs and sends the request for a dataset and date
	// range and returns the raw answer. A non-nil error is a context error
	// of ctx or carries a Class (ClassOf); NoData comes back as an error,
	// with no Response.
	Fetch(ctx context.Context, req Request) (*Response, error)
	// Probe sends the cheapest request that proves the dataset answers
	// (a few recent days, one row; each connector documents its probe) and
	// returns its answer, at most MaxProbeBytes of it (ReadProbe), or a
	// classified error. The answer is for the watch's shape fingerprint and
	// newest period; nothing stores it. NoData is returned as an error of
	// class NoData: the provider answered and the endpoint is up, but the
	// probe window held no rows; a dataset that keeps answering NoData has
	// probably stopped publishing, which is the caller's to judge.
	Probe(ctx context.Context, ds *registry.Dataset) (ProbeAnswer, error)
}

// Call identifies one outbound request for the rate-limit hooks.
type Call struct {
	Provider string // registry provider id
	Dataset  string // registry dataset id; empty for token calls
	Kind     string // CallData or CallToken
	Probe    bool   // the data call is a probe
	// Priority is the call's class at the scope limiter (Request.Priority).
	Priority Priority
	// Tracks says the caller reports the request's way to the wire
	// through Permit.Track (Base does, for every request it gates), so a
	// gate may give a permit whose use counts on those reports.
	Tracks bool

	// bounds are the dataset's bounds where they differ from its
	// provider's (set by Base.Dataset); zero: the provider's.
	bounds registry.Bounds
}

// Priority is the class of a call at the scope limiter: when calls of
// several classes wait for the same scope, the higher class is served
// first.
type Priority string

const (
	// PriorityDaily, the zero value, is a daily run's call.
	PriorityDaily Priority = ""
	// PriorityProbe is a watch probe's call: served after every daily
	// call that waits for the same scope (a limiter of rules older than
	// ratelimit.RulesProbe serves it as a daily call); it counts in the
	// reserved demand, not the backfill share.
	PriorityProbe Priority = "probe"
	// PriorityBackfill is a backfill's call: served after every daily call
	// that waits for the same scope, and only from the daily quota that the
	// day's reserved demand (scheduled ingests and probes) leaves.
	PriorityBackfill Priority = "backfill"
)

// Observation is what Observe learns of one call: its outcome and any
// provider-specific signal a connector read from the answer. Connectors
// parse their own provider's signals, so a rate limiter never needs to know
// a provider's headers.
type Observation struct {
	Call Call
	// Status is the HTTP status, 0 when no response arrived.
	Status int
	// Err is the classified error (ClassOf), a context error, or nil on
	// success.
	Err error
	// Remaining is what the provider says is left of its own budget, when
	// it says so (UPBIT Remaining-Req); nil otherwise.
	Remaining *Remaining
}

// Remaining is a provider's own account of its budget, read from an answer.
type Remaining struct {
	// Group names the provider's rate-limit group. A connector reports only
	// groups from a fixed list it knows (anything else as "other"), so the
	// value is safe as a metrics label.
	Group string
	// Left is how many calls the group's current window still allows.
	Left int
	// Window is the length of that window (one second for UPBIT).
	Window time.Duration
}

// Permit is what Options.Gate grants one request.
type Permit struct {
	// Deadline is the latest moment (on the connector's clock, Options.Now)
	// the request may leave; the zero time means no deadline.
	Deadline time.Time
	// Track, if not nil, follows the request to the wire: a gate that
	// spaces the process's later calls from the moment this one was
	// written learns it here.
	Track SendTracker
}

// SendTracker follows one permitted request (Permit.Track). Its methods
// are called on the connector's clock, from net/http's goroutines.
type SendTracker interface {
	// Leave is the last check, once the request's connection is ready and
	// just before it is written: false means the permit can no longer be
	// used (its deadline passed, or its gate gave it up), and the request
	// asks Gate again instead of leaving.
	Leave(now time.Time) bool
	// Wrote says the request's headers were written.
	Wrote(now time.Time)
	// Done says the request's round trip ended, answered or failed; it
	// comes after Wrote, or instead of it when the write was not reported.
	Done(now time.Time)
}

// Call kinds.
const (
	CallData  = "data"  // a dataset request (fetch or probe)
	CallToken = "token" // an authentication token request (KIS /oauth2/tokenP)
)

// Options configure a connector. The zero value works: credentials from
// the environment, the shared HTTP client, tokens kept in this process,
// slog.Default, time.Now and no rate-limit hooks.
type Options struct {
	// BaseURL overrides the provider's base URL (the simulator, the KIS
	// mock host). It may carry a path prefix.
	BaseURL string
	// Credentials looks up a credential by environment variable name; nil
	// means EnvCredentials.
	Credentials Credentials
	// HTTPClient sends every request; nil means the shared client
	// (HTTPClient()). Its CheckRedirect is never used: the connector
	// decides redirects itself (see Base.Do). For Gate's deadline to stop
	// a late request, its transport must report httptrace's GotConn and
	// give each request a connection of its own (HTTP/1.1, as the shared
	// client does).
	HTTPClient *http.Client
	// TokenStore keeps issued tokens across processes (KIS); nil keeps
	// them in this process only (cmd/sluice passes the file store under
	// the data directory, or the token keepers).
	TokenStore TokenStore
	// Logger receives redacted log lines; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Gate is called before every outbound request, data and token calls
	// alike (each hop of a same-host redirect is a request of its own);
	// the global rate limiter waits here and returns once the request may
	// be sent, with the latest moment it may leave (Permit.Deadline). The
	// connector then obtains a connection — DNS, TCP and TLS can take
	// seconds — and, once it has one and just before the request is
	// written on it, checks the deadline against Now: a request that would
	// leave after its deadline calls Gate again, holding its connection,
	// and waits for a new permit; so does one that net/http is about to
	// send a second time (a reused connection the server had closed). A
	// request never leaves on a stale permit. A non-nil error aborts the
	// call before anything is sent (a connection held for it is closed)
	// and is returned wrapped. nil: no wait.
	Gate func(ctx context.Context, call Call) (Permit, error)
	// TokenIssued is called when the connector has been issued a new
	// access token (KIS), after it is stored; it is told the provider and
	// the token's times, never the token. nil: only logged.
	TokenIssued func(ctx context.Context, t TokenIssue)
	// Observe is called after every response (or transport failure) with
	// what the call's outcome says (the HTTP status, the classified error,
	// provider signals such as UPBIT's Remaining-Req), so the limiter can
	// adapt to rejections. ctx is the context the call was made with.
	// nil: nothing observes.
	Observe func(ctx context.Context, o Observation)
	// StallTimeout aborts a response whose body makes no progress for this
	// long, whether the provider stopped sending or the caller stopped
	// reading (the read fails with a Transient error); 0 means 2 minutes.
	StallTimeout time.Duration
}

// Factory builds a provider's connector.
type Factory func(p *registry.Provider, opts Options) (Connector, error)

var (
	factoriesMu sync.RWMutex
	factories   = map[string]Factory{}
)

// Register makes a connector available to New under its registry
// connector name (spec.Connector, matched against registry
// Provider.Connector, e.g. "kis") and registers its wire spec, which the
// registry validates datasets against (wire.Register). Subpackages call it
// from init; registering a name twice panics, as it is a programming error.
func Register(spec wire.Spec, f Factory) {
	factoriesMu.Lock()
	defer factoriesMu.Unlock()
	if _, dup := factories[spec.Connector]; dup {
		panic("connector: Register called twice for " + spec.Connector)
	}
	wire.Register(spec)
	factories[spec.Connector] = f
}

// Registered returns the registered connector names, sorted.
func Registered() []string {
	factoriesMu.RLock()
	defer factoriesMu.RUnlock()
	names := make([]string, 0, len(factories))
	for n := range factories {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// New returns the connector for a provider, chosen by p.Connector. The
// provider connectors must be linked in (import
// github.com/sluicehq/sluice/connector/all).
func New(p *registry.Provider, opts Options) (Connector, error) {
	if p == nil {
		return nil, fmt.Errorf("creating connector: no provider given")
	}
	name := p.Connector
	if name == "" {
		name = p.ID
	}
	factoriesMu.RLock()
	f := factories[name]
	factoriesMu.RUnlock()
	if f == nil {
		known := Registered()
		hint := "import github.com/sluicehq/sluice/connector/all to link every connector"
		if len(known) > 0 {
			hint = "registered: " + strings.Join(known, ", ") + "; " + hint
		}
		return nil, fmt.Errorf("creating connector for provider %s: no connector named %q (%s)", p.ID, name, hint)
	}
	c, err := f(p, opts)
	if err != nil {
		return nil, fmt.Errorf("creating connector for provider %s: %w", p.ID, err)
	}
	return c, nil
}
