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

	"github.com/sluicehq/sluice/ratelimit/permit"
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

// Options configure a connector. The zero value works: credentials from
// the environment, the shared HTTP client, tokens kept in this process,
// slog.Default, time.Now and no rate limiting.
type Options struct {
	// BaseURL overrides the provider's base URL (the simulator, the KIS
	// mock host). It may carry a path prefix.
	BaseURL string
	// Credentials looks up a credential by environment variable name; nil
	// means EnvCredentials.
	Credentials Credentials
	// HTTPClient sends every request; nil means the shared client
	// (HTTPClient()). Its CheckRedirect is never used: the connector
	// decides redirects itself (see Base.Do). For the limiter's deadline
	// to stop a late request, its transport must report httptrace's
	// GotConn and give each request a connection of its own (HTTP/1.1, as
	// the shared client does).
	HTTPClient *http.Client
	// TokenStore keeps issued tokens across processes (KIS); nil keeps
	// them in this process only (cmd/sluice passes the file store under
	// the data directory, or the token keepers).
	TokenStore TokenStore
	// Logger receives redacted log lines; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Limiter holds every outbound request to the rate limits and is told
	// its outcome (ratelimit.Gate; the contract is package
	// ratelimit/permit). Its Wait is called before every outbound request,
	// data and token calls alike (each hop of a same-host redirect is a
	// request of its own), and returns once the request may be sent, with
	// the latest moment it may leave (permit.Permit.Deadline). The
	// connector then obtains a connection — DNS, TCP and TLS can take
	// seconds — and, once it has one and just before the request is
	// written on it, checks the deadline against Now: a request that would
	// leave after its deadline calls Wait again, holding its connection,
	// and waits for a new permit; so does one that net/http is about to
	// send a second time (a reused connection the server had closed). A
	// request never leaves on a stale permit. A non-nil error aborts the
	// call before anything is sent (a connection held for it is closed)
	// and is returned wrapped. Its Observe is called after every response
	// (or transport failure) with what the call's outcome says (the HTTP
	// status, the classified error, provider signals such as UPBIT's
	// Remaining-Req), so the limiter can adapt to rejections. nil: no
	// limiting.
	Limiter permit.Limiter
	// TokenIssued is called when the connector has been issued a new
	// access token (KIS), after it is stored; it is told the provider and
	// the token's times, never the token. nil: only logged.
	TokenIssued func(ctx context.Context, t TokenIssue)
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

// Endpointer is implemented by a connector whose calls go to a path other
// than the dataset's request.path: Endpoint names the path a dataset's
// calls go to under the base URL, without credentials, parameters or
// dates — the endpoint a lineage event names as the ingest's input.
// Without it the endpoint is the dataset's request.path.
type Endpointer interface {
	Endpoint(ds *registry.Dataset) string
}

// TokenWarmer is a connector that calls with an access token it must
// first obtain (KIS): WarmToken makes sure it holds a usable one — the
// stored one, or one issued now — so that a batch about to start does not
// make its first calls wait for the token endpoint.
type TokenWarmer interface {
	WarmToken(ctx context.Context) error
}

// EndpointOf is the path a dataset's calls go to under the base URL
// (Endpointer), "/" when neither the connector nor the dataset names one.
func EndpointOf(c Connector, ds *registry.Dataset) string {
	if e, ok := c.(Endpointer); ok {
		if p := e.Endpoint(ds); p != "" {
			return p
		}
	}
	if ds != nil && ds.Request.Path != "" {
		return ds.Request.Path
	}
	return "/"
}
