package status

import (
	"compress/gzip"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Config is what a status server reads.
type Config struct {
	// Registry and Store are required.
	Registry *registry.Registry
	Store    store.Store
	// Lake is read for the newest period and the coverage map; nil: the
	// pages say no lake is configured.
	Lake sink.Sink
	// LakeDescription names the lake on the operator page.
	LakeDescription string
	// Limiter answers the scope limiters' state; nil: "limiter not
	// running" for every scope.
	Limiter LimiterStates
	// Schedules, Backfills and Manifests feed the operator page; nil: the
	// section says what is not connected.
	Schedules Schedules
	Backfills Backfills
	Manifests Manifests
	// OperatorToken guards /ops; empty: the operator page is off (and
	// Serve refuses a non-loopback address).
	OperatorToken string
	// TrustedProxies are the reverse proxies in front of the server, as
	// the prefixes a connection's address must fall in: from them, and
	// only from them, X-Forwarded-For and X-Real-IP name the client whose
	// wrong tokens are counted, and X-Forwarded-Proto: https marks the
	// cookies Secure (and sends HSTS). Empty: none, the headers are
	// ignored (ParseTrustedProxies reads the flag's form).
	TrustedProxies []netip.Prefix
	// Location is where the uptime bars' days begin; nil: UTC.
	Location *time.Location
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Logger receives internal errors, which pages never show; nil:
	// slog.Default().
	Logger *slog.Logger
	// LakeRefresh is how old the lake's index may grow before a request
	// starts a new scan (served stale meanwhile); 0: one minute.
	LakeRefresh time.Duration
	// Title heads every page; "": "Sluice status".
	Title string
	// PublicURL is where readers reach the public pages, as scheme, host
	// and an optional path prefix (https://status.example.com). The Atom
	// feeds' links and the Statuspage API's page url are absolute under
	// it; "": they are paths, relative to wherever the answer was read.
	PublicURL string
}

// Server serves the status pages. Build it with New.
type Server struct {
	cfg   Config
	now   func() time.Time
	log   *slog.Logger
	auth  *auth
	tmpl  map[string]*template.Template
	loc   *time.Location
	title string

	lakeMu   sync.Mutex
	lakeIx   *LakeIndex
	lakeErr  error
	scanning chan struct{}
	newest   map[string]newestCache // by key
	newestOf map[string]NewestPeriod
}

type newestCache struct {
	modified time.Time
	period   string
	ok       bool
}

// New checks cfg and builds a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Registry == nil || cfg.Store == nil {
		return nil, errors.New("creating the status server: a registry and a watch store are required")
	}
	if cfg.OperatorToken != "" {
		if err := ValidateToken(cfg.OperatorToken); err != nil {
			return nil, fmt.Errorf("creating the status server: %w", err)
		}
	}
	pub, err := CheckPublicURL(cfg.PublicURL)
	if err != nil {
		return nil, fmt.Errorf("creating the status server: %w", err)
	}
	cfg.PublicURL = pub
	s := &Server{cfg: cfg, now: cfg.Now, log: cfg.Logger, loc: cfg.Location, title: cfg.Title, newest: map[string]newestCache{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.loc == nil {
		s.loc = time.UTC
	}
	if s.title == "" {
		s.title = "Sluice status"
	}
	if s.cfg.LakeRefresh <= 0 {
		s.cfg.LakeRefresh = time.Minute
	}
	s.auth = newAuth(cfg.OperatorToken, s.now, cfg.TrustedProxies)
	if s.tmpl, err = parseTemplates(); err != nil {
		return nil, fmt.Errorf("creating the status server: %w", err)
	}
	return s, nil
}

// CheckPublicURL checks a Config.PublicURL and returns it without a
// trailing slash.
func CheckPublicURL(u string) (string, error) {
	if u == "" {
		return "", nil
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" || p.User != nil ||
		p.RawQuery != "" || p.Fragment != "" || strings.ContainsAny(u, " <>\"'") {
		return "", fmt.Errorf("public URL %q: want http(s)://host[/prefix], without user, query or fragment", u)
	}
	return strings.TrimRight(p.String(), "/"), nil
}

// Handler returns the pages, the JSON API and the stylesheet.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.summaryPage)
	mux.HandleFunc("GET /datasets/{id}", s.datasetPage)
	mux.HandleFunc("GET /api/v1/summary.json", s.summaryJSON)
	mux.HandleFunc("GET /api/v1/datasets/{file}", s.datasetJSON)
	mux.HandleFunc("GET /api/v2/status.json", s.statuspageStatusJSON)
	mux.HandleFunc("GET /api/v2/summary.json", s.statuspageSummaryJSON)
	mux.HandleFunc("GET /api/v2/components.json", s.statuspageComponentsJSON)
	mux.HandleFunc("GET /feed.atom", s.feed)
	mux.HandleFunc("GET /datasets/{id}/feed.atom", s.datasetFeed)
	mux.HandleFunc("GET /badge/{file}", s.providerBadge)
	mux.HandleFunc("GET /badge/{provider}/{file}", s.datasetBadge)
	mux.HandleFunc("GET /static/style.css", s.stylesheet)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /ops/login", s.loginPage)
	mux.HandleFunc("POST /ops/login", s.login)
	mux.HandleFunc("POST /ops/logout", s.logout)
	mux.HandleFunc("GET /ops", s.operator(s.opsPage))
	mux.HandleFunc("GET /ops/coverage/{id}", s.operator(s.coveragePage))
	mux.HandleFunc("GET /ops/api/v1/ops.json", s.operator(s.opsJSON))
	return s.secure(mux)
}

// Request limits.
const (
	requestTimeout = 20 * time.Second
	maxFormBytes   = 4 << 10
	maxQueryBytes  = 512
)

// secure wraps every response: security headers, bounded queries, a
// deadline, gzip, and a recovered panic that shows nothing internal.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if s.auth.secure(r) {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		if len(r.URL.RawQuery) > maxQueryBytes {
			s.errorPage(w, r, http.StatusRequestURITooLong, "The query is too long.")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		r = r.WithContext(ctx)
		h.Add("Vary", "Accept-Encoding")
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") && r.Method != http.MethodHead {
			gz := gzip.NewWriter(w)
			defer gz.Close()
			h.Set("Content-Encoding", "gzip")
			w = gzipWriter{ResponseWriter: w, w: gz}
		}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("status page panicked", "path", r.URL.Path, "panic", fmt.Sprint(v))
				http.Error(w, "internal error", http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

type gzipWriter struct {
	http.ResponseWriter
	w io.Writer
}

func (g gzipWriter) Write(b []byte) (int, error) { return g.w.Write(b) }

// Serve listens on addr and serves until ctx ends. It refuses a
// non-loopback address without an operator token. ready, if not nil,
// receives the address bound (port 0 picks one).
func (s *Server) Serve(ctx context.Context, addr string, ready func(net.Addr)) error {
	if err := CheckListen(addr, s.cfg.OperatorToken); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening for the status pages on %s: %w", addr, err)
	}
	return s.ServeListener(ctx, ln, ready)
}

// ServeListener serves on ln until ctx ends (Serve without the address
// check: the caller made it).
func (s *Server) ServeListener(ctx context.Context, ln net.Listener, ready func(net.Addr)) error {
	hs := NewHTTPServer(s.Handler())
	go s.RefreshLake(context.WithoutCancel(ctx)) //nolint:errcheck // logged inside
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serving the status pages: %w", err)
	}
}

// NewHTTPServer returns an http.Server with the status pages' timeouts.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      requestTimeout + 10*time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    32 << 10,
	}
}

// lakeScanTimeout bounds one scan of the lake.
const lakeScanTimeout = 5 * time.Minute

// RefreshLake scans the lake now and waits for the scan (the pages use
// the previous index until it is done).
func (s *Server) RefreshLake(ctx context.Context) error {
	s.lakeMu.Lock()
	ch := s.scanning
	if ch == nil {
		ch = make(chan struct{})
		s.scanning = ch
		go s.scan(ch)
	}
	s.lakeMu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.lakeMu.Lock()
	defer s.lakeMu.Unlock()
	return s.lakeErr
}

func (s *Server) scan(done chan struct{}) {
	defer close(done)
	if s.cfg.Lake == nil {
		s.lakeMu.Lock()
		s.lakeIx, s.lakeErr, s.scanning = nil, nil, nil
		s.lakeMu.Unlock()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lakeScanTimeout)
	defer cancel()
	ix, err := ScanLake(ctx, s.cfg.Lake, s.cfg.Registry, s.now())
	if err != nil {
		s.log.Error("scanning the lake for the status pages", "err", err)
	}
	var newest map[string]NewestPeriod
	if ix != nil {
		newest = s.readNewest(ctx, ix)
	}
	s.lakeMu.Lock()
	defer s.lakeMu.Unlock()
	if ix != nil {
		s.lakeIx, s.newestOf = ix, newest
	}
	s.lakeErr, s.scanning = err, nil
}

// readNewest finds each dataset's newest period: from its newest object's
// rows where they can be read, else from the object's key. Results are
// kept per key and modification time.
func (s *Server) readNewest(ctx context.Context, ix *LakeIndex) map[string]NewestPeriod {
	out := map[string]NewestPeriod{}
	seen := map[string]bool{}
	for _, ds := range s.cfg.Registry.Datasets {
		obj, ok := ix.Newest(ds.ID)
		if !ok {
			continue
		}
		np := NewestPeriod{Key: obj.Key, LogicalDate: dayOf(obj.To).String(), Period: dayOf(obj.To).String(), Source: SourceKey}
		s.lakeMu.Lock()
		c, cached := s.newest[obj.Key]
		s.lakeMu.Unlock()
		if !cached || !c.modified.Equal(obj.Modified) {
			c = newestCache{modified: obj.Modified}
			if ds.Wire != nil {
				p, err := newestRow(ctx, s.cfg.Lake, obj.Key, ds.Wire.Rows, watch.CycleOf(s.cfg.Registry, ds))
				c.period, c.ok = p, err == nil
			}
			s.lakeMu.Lock()
			s.newest[obj.Key] = c
			s.lakeMu.Unlock()
		}
		if c.ok {
			np.Period, np.Source = c.period, SourceRows
		}
		seen[obj.Key] = true
		out[ds.ID] = np
	}
	s.lakeMu.Lock()
	for k := range s.newest {
		if !seen[k] {
			delete(s.newest, k)
		}
	}
	s.lakeMu.Unlock()
	return out
}

// lake returns the lake's index, starting a scan when it is older than
// LakeRefresh; a request waits only when there is no index yet.
func (s *Server) lake(ctx context.Context) (*LakeIndex, map[string]NewestPeriod) {
	s.lakeMu.Lock()
	ix, newest := s.lakeIx, s.newestOf
	fresh := ix != nil && s.now().Sub(ix.Scanned) < s.cfg.LakeRefresh
	s.lakeMu.Unlock()
	if fresh || s.cfg.Lake == nil {
		return ix, newest
	}
	if ix != nil {
		go s.RefreshLake(context.Background()) //nolint:errcheck // logged inside
		return ix, newest
	}
	_ = s.RefreshLake(ctx)
	s.lakeMu.Lock()
	defer s.lakeMu.Unlock()
	return s.lakeIx, s.newestOf
}

func (s *Server) stylesheet(w http.ResponseWriter, _ *http.Request) {
	b, err := assets.ReadFile("static/style.css")
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(b)
}
