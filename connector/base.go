package connector

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/version"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

// defaultStallTimeout aborts a body that makes no progress for this long.
const defaultStallTimeout = 2 * time.Minute

// maxDrain is how much of a failed answer's body is read before closing,
// so that its connection can be reused.
const maxDrain = 64 << 10

// Base is the shared skeleton every provider connector is built on: it
// resolves the base URL and credentials, sends requests through the rate
// limit hooks and the shared client, peeks and classifies the head of each
// answer, redacts every URL, message and log line, and hands back the body
// as a stream.
type Base struct {
	provider *registry.Provider
	baseURL  string
	client   *http.Client
	log      *slog.Logger
	now      func() time.Time
	limiter  permit.Limiter
	issued   func(context.Context, TokenIssue)
	creds    Credentials
	secrets  *Secrets
	stall    time.Duration
	store    TokenStore
	// confirm counts ambiguous answers (Error.Confirm) in a row.
	confirm confirmations
}

// NewBase validates the provider and options and returns the skeleton.
func NewBase(p *registry.Provider, opts Options) (*Base, error) {
	if p == nil {
		return nil, errors.New("creating connector: no provider given")
	}
	raw := opts.BaseURL
	if raw == "" {
		raw = p.BaseURL
	}
	if raw == "" {
		return nil, fmt.Errorf("creating %s connector: no base URL (set base_url in providers.yaml or Options.BaseURL)", p.ID)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("creating %s connector: base URL %q is not an http(s) URL without query", p.ID, raw)
	}
	b := &Base{
		provider: p,
		baseURL:  strings.TrimRight(raw, "/"),
		client:   opts.HTTPClient,
		now:      opts.Now,
		limiter:  opts.Limiter,
		issued:   opts.TokenIssued,
		creds:    opts.Credentials,
		secrets:  &Secrets{},
		stall:    opts.StallTimeout,
		store:    opts.TokenStore,
	}
	if b.client == nil {
		b.client = HTTPClient()
	}
	// Redirects are decided in Do, hop by hop, never by the client: a
	// shallow copy shares the pool and answers every redirect as it came.
	c := *b.client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	b.client = &c
	if b.now == nil {
		b.now = time.Now
	}
	if b.creds == nil {
		b.creds = EnvCredentials
	}
	if b.stall <= 0 {
		b.stall = defaultStallTimeout
	}
	lg := opts.Logger
	if lg == nil {
		lg = slog.Default()
	}
	b.log = slog.New(NewRedactingHandler(lg.Handler(), b.secrets)).With("provider", p.ID)
	return b, nil
}

// Provider returns the provider the connector speaks to.
func (b *Base) Provider() *registry.Provider { return b.provider }

// BaseURL returns the base URL in use, without a trailing slash.
func (b *Base) BaseURL() string { return b.baseURL }

// Now returns the connector's clock.
func (b *Base) Now() time.Time { return b.now() }

// Location returns the provider's timezone (UTC when undeclared).
func (b *Base) Location() *time.Location {
	if b.provider.Location != nil {
		return b.provider.Location
	}
	return time.UTC
}

// Today returns today's civil date in the provider's timezone.
func (b *Base) Today() time.Time { return CivilDate(b.now().In(b.Location())) }

// Logger returns the connector's redacting logger.
func (b *Base) Logger() *slog.Logger { return b.log }

// TokenIssued reports a newly issued token to Options.TokenIssued, if set.
func (b *Base) TokenIssued(ctx context.Context, t TokenIssue) {
	if b.issued != nil {
		b.issued(ctx, t)
	}
}

// Secrets returns the set of secrets the connector redacts.
func (b *Base) Secrets() *Secrets { return b.secrets }

// TokenStore returns Options.TokenStore (nil when not set).
func (b *Base) TokenStore() TokenStore { return b.store }

// Credential looks up the credential of an auth role (app_key, api_key,
// service_key, …) through the environment variable the registry names, and
// remembers it for redaction. A missing credential is an AuthFailed error.
func (b *Base) Credential(role string) (string, error) {
	name := b.provider.Auth.Credentials[role]
	if name == "" {
		return "", &Error{Class: AuthFailed, Provider: b.provider.ID,
			Message: fmt.Sprintf("the registry names no credential for role %s (auth.credentials.%s)", role, role)}
	}
	v, err := b.creds(name)
	if err != nil {
		return "", &Error{Class: AuthFailed, Provider: b.provider.ID,
			Message: fmt.Sprintf("credential %s (%s) unavailable", role, name), Err: b.sanitize(err)}
	}
	b.secrets.Add(v)
	return v, nil
}

// Dataset checks that a request names a dataset of this provider and
// returns the call it makes.
func (b *Base) Dataset(req Request, probe bool) (permit.Call, *registry.Dataset, *Error) {
	call := permit.Call{Provider: b.provider.ID, Kind: permit.CallData, Probe: probe, Priority: req.Priority}
	ds := req.Dataset
	if ds == nil {
		return call, nil, b.Fail(call, 0, &Error{Class: BadRequest, Message: "no dataset given"})
	}
	call.Dataset = ds.ID
	if ds.Provider != "" && ds.Provider != b.provider.ID {
		return call, nil, b.Fail(call, 0, &Error{Class: BadRequest,
			Message: fmt.Sprintf("dataset %s belongs to provider %s, not %s", ds.ID, ds.Provider, b.provider.ID)})
	}
	return call, ds, nil
}

// URL joins the base URL, an escaped path and an encoded query.
func (b *Base) URL(escapedPath, rawQuery string) string {
	u := b.baseURL + escapedPath
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	return u
}

// maxCodeLen bounds a provider code kept in an Error.
const maxCodeLen = 64

// Fail completes a classifier's or connector's error: provider, dataset,
// status, and the code, message and underlying error redacted (see
// sanitize). An ambiguous answer (Error.Confirm) is counted: until
// confirmed it comes back Transient, its would-be class in Unconfirmed.
func (b *Base) Fail(call permit.Call, status int, e *Error) *Error {
	e.Provider = b.provider.ID
	if e.Dataset == "" {
		e.Dataset = call.Dataset
	}
	if e.Class == NoData {
		// The provider looked for the dataset's rows: the key works.
		b.confirm.succeeded(e.Dataset)
	}
	b.confirm.confirm(e)
	if e.Status == 0 {
		e.Status = status
	}
	e.Message = b.secrets.Redact(e.Message)
	// The code is the provider's too (KIS msg_cd, an UPBIT error name): it
	// travels into events and the limiter's penalize update.
	if e.Code = b.secrets.Redact(e.Code); len(e.Code) > maxCodeLen {
		e.Code = e.Code[:maxCodeLen]
	}
	e.Err = b.sanitize(e.Err)
	return e
}

// Exchange is one request for Base.Do.
type Exchange struct {
	Call   permit.Call // what the call is, for the limiter and logs
	Method string      // GET when empty
	URL    string      // the full URL, secrets included
	Header http.Header // request headers; may hold secrets and are never logged
	Body   []byte      // request body; may hold secrets and is never logged
	// Format is the format asked of the provider, "json" or "xml"; it
	// decides Response.Ext when neither body nor content type do.
	Format string
	// Classify decides the outcome from the head of the answer.
	Classify func(Head) Verdict
	// Bounds are the dataset's own bounds (registry.Dataset.Bounds),
	// which override its provider's field by field; the zero value: the
	// provider's. Skeleton.Fetch sets them from the request's dataset.
	Bounds registry.Bounds
}

// maxRedirects is how many same-host redirects one Do follows.
const maxRedirects = 5

// Do sends one request: Limiter.Wait, the HTTP exchange (re-checking the
// permit once a connection is ready, see Options.Limiter), a peek at the
// head of the body, Classify, Limiter.Observe, a log line, and on success a Response whose
// Body yields every byte of the body. On failure the body is closed and
// the classified error (or the caller's context error) returned.
//
// Redirects are decided here, never by the HTTP client. One to another
// host (or port), to a weaker scheme (https to http), with a Location
// that is not an http(s) URL, beyond maxRedirects, or that would turn a
// request with a body into a GET (301, 302, 303 after a POST) is refused:
// BadRequest, Code the status, the message naming the status and the
// target host, never its path or query. A same-host redirect (http to
// https on the same host included) is followed as a request of its own:
// through Limiter.Wait, with the same headers and, for 307 and 308, the same body.
func (b *Base) Do(ctx context.Context, x Exchange) (*Response, error) {
	if x.Method == "" {
		x.Method = http.MethodGet
	}
	for hop := 0; ; hop++ {
		resp, next, err := b.do(ctx, x, hop)
		if next == nil {
			return resp, err
		}
		x = *next
	}
}

// do sends one hop: the response, or the next hop's exchange when the
// answer is a redirect to follow, or an error.
func (b *Base) do(ctx context.Context, x Exchange, hop int) (*Response, *Exchange, error) {
	red := b.secrets.RedactURL(x.URL)
	reqCtx, cancel := context.WithCancelCause(ctx)
	req, err := b.newRequest(reqCtx, x, red)
	if err != nil {
		cancel(nil)
		return nil, nil, err
	}
	gated := x.Call
	gated.Tracks = true // the guard reports to Permit.Track
	guard := &sendGuard{b: b, ctx: ctx, call: gated, cancel: cancel}
	if b.limiter != nil {
		p, err := b.limiter.Wait(ctx, gated)
		if err != nil {
			cancel(nil)
			return nil, nil, b.gateError(x.Call, err)
		}
		guard.permit = p
		req = req.WithContext(httptrace.WithClientTrace(reqCtx, guard.trace()))
	}
	bounds := b.provider.Bounds.Merge(x.Bounds).OrDefault()
	clock := &pageClock{now: b.now, d: bounds.PageTimeout, onExpire: func() { cancel(errPageTimeout) }}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{WroteHeaders: clock.begin}))
	start := time.Now()
	resp, err := b.client.Do(req)
	guard.done()
	if err != nil {
		clock.stop()
		cancel(nil)
		if ctx.Err() != nil {
			b.observeCall(ctx, permit.Observation{Call: x.Call, Err: ctx.Err()})
			return nil, nil, fmt.Errorf("sending %s request %s: %w", b.provider.ID, red, context.Cause(ctx))
		}
		if lost := guard.lostErr(); lost != nil {
			// Written, but still unacknowledged well past its permit: the
			// connection was reset. The limiter counted the call.
			e := b.Fail(x.Call, 0, lost)
			b.observeCall(ctx, permit.Observation{Call: x.Call, Err: e})
			b.logCall(ctx, x, red, 0, e, time.Since(start))
			return nil, nil, e
		}
		if guard.err != nil {
			// The permit expired while connecting and Wait refused a new
			// one: nothing was sent.
			return nil, nil, b.gateError(x.Call, guard.err)
		}
		e := b.Fail(x.Call, 0, &Error{Class: Transient, Message: "sending request", Err: err})
		b.observeCall(ctx, permit.Observation{Call: x.Call, Err: e})
		b.logCall(ctx, x, red, 0, e, time.Since(start))
		return nil, nil, e
	}
	if isRedirect(resp.StatusCode) && resp.Header.Get("Location") != "" {
		clock.stop()
		next, err := b.redirectHop(ctx, x, resp, hop, red, start, cancel)
		return nil, next, err
	}
	clock.arrived()
	guardBody := newBodyGuard(decodedBody(resp), b.stall, clock, bounds.PageBytes, cancel)
	readFailure := func(err error) *Error {
		return b.readFailure(x.Call, resp.StatusCode, err, reqCtx, bounds, guardBody, clock)
	}
	br := bufio.NewReaderSize(guardBody, HeadSize)
	head, perr := br.Peek(HeadSize)
	complete := false
	switch {
	case perr == nil:
	case errors.Is(perr, io.EOF):
		complete = true
	default:
		guardBody.stop()
		resp.Body.Close()
		cancel(nil)
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("reading %s response %s: %w", b.provider.ID, red, context.Cause(ctx))
		}
		e := readFailure(perr)
		b.observeCall(ctx, permit.Observation{Call: x.Call, Status: resp.StatusCode, Err: e})
		b.logCall(ctx, x, red, resp.StatusCode, e, time.Since(start))
		return nil, nil, e
	}
	v := Verdict{Err: &Error{Class: Transient, Message: "no classifier"}}
	h := Head{Status: resp.StatusCode, Header: resp.Header, Bytes: head, Complete: complete,
		Format: x.Format, Now: b.now(), Location: b.Location()}
	if x.Classify != nil {
		v = x.Classify(h)
	}
	if h.Foreign() != "" && (v.Err == nil || v.Err.Class == BadRequest || v.Err.Class == NoData) {
		// Whatever the classifier made of it, an empty body, an HTML page
		// or plain text where JSON or XML was asked is no answer of the
		// provider's API: never data, never our bad request.
		v = ForeignVerdict(h)
	}
	var verr error
	if v.Err != nil {
		verr = b.Fail(x.Call, resp.StatusCode, v.Err)
	} else {
		b.confirm.succeeded(x.Call.Dataset)
	}
	b.observeCall(ctx, permit.Observation{Call: x.Call, Status: resp.StatusCode, Err: verr, Remaining: v.Remaining})
	b.logCall(ctx, x, red, resp.StatusCode, verr, time.Since(start))
	if verr != nil {
		// Read a small error body to its end so the connection is reused.
		io.CopyN(io.Discard, br, maxDrain)
		guardBody.stop()
		resp.Body.Close()
		cancel(nil)
		return nil, nil, verr
	}
	ct := resp.Header.Get("Content-Type")
	return &Response{
		Body: &responseBody{r: br, raw: resp.Body, guard: guardBody, cancel: cancel,
			fail: func(err error) error {
				if ctx.Err() != nil {
					return fmt.Errorf("reading %s response %s: %w", b.provider.ID, red, context.Cause(ctx))
				}
				return readFailure(err)
			}},
		Status:      resp.StatusCode,
		Header:      selectHeaders(resp.Header),
		URL:         red,
		ContentType: ct,
		Ext:         extOf(head, ct, x.Format),
		More:        v.More,
	}, nil, nil
}

// newRequest builds the HTTP request of one hop: its method, URL, body,
// headers and Sluice's User-Agent.
func (b *Base) newRequest(ctx context.Context, x Exchange, red string) (*http.Request, error) {
	var body io.Reader
	if x.Body != nil {
		body = bytes.NewReader(x.Body)
	}
	req, err := http.NewRequestWithContext(ctx, x.Method, x.URL, body)
	if err != nil {
		return nil, b.Fail(x.Call, 0, &Error{Class: BadRequest, Message: "building request for " + red, Err: err})
	}
	for k, vs := range x.Header {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", version.UserAgent())
	return req, nil
}

// redirectHop ends a hop answered by a redirect: the body drained and
// closed, the request's context released, the call observed and logged;
// it returns the next hop's exchange, or why the redirect is not followed.
func (b *Base) redirectHop(ctx context.Context, x Exchange, resp *http.Response, hop int, red string, start time.Time,
	cancel context.CancelCauseFunc) (*Exchange, error) {
	next, rerr := b.redirect(x, resp, hop)
	io.CopyN(io.Discard, resp.Body, maxDrain)
	resp.Body.Close()
	cancel(nil)
	var oerr error
	if rerr != nil {
		oerr = rerr
	}
	b.observeCall(ctx, permit.Observation{Call: x.Call, Status: resp.StatusCode, Err: oerr})
	b.logCall(ctx, x, red, resp.StatusCode, oerr, time.Since(start))
	if rerr != nil {
		return nil, rerr
	}
	return next, nil
}

// gateError wraps an error of Options.Limiter's Wait.
func (b *Base) gateError(call permit.Call, err error) error {
	return fmt.Errorf("waiting for the rate limiter before %s %s call: %w", b.provider.ID, call.Kind, err)
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// redirect decides a redirect answer (see Do): the next hop's exchange,
// or the refusal.
func (b *Base) redirect(x Exchange, resp *http.Response, hop int) (*Exchange, *Error) {
	status := resp.StatusCode
	refuse := func(why string) *Error {
		return b.Fail(x.Call, status, &Error{Class: BadRequest, Code: strconv.Itoa(status),
			Message: fmt.Sprintf("HTTP %d %s: refusing to follow the redirect %s", status, http.StatusText(status), why)})
	}
	from := resp.Request.URL
	to, err := from.Parse(resp.Header.Get("Location"))
	if err != nil || (to.Scheme != "http" && to.Scheme != "https") || to.Host == "" {
		return nil, refuse("to a Location that is not an http(s) URL")
	}
	target := hostForMessage(to)
	switch {
	case from.Scheme == "https" && to.Scheme != "https":
		return nil, refuse(fmt.Sprintf("from https to plain http (%s)", target))
	case !sameHost(from, to):
		return nil, refuse(fmt.Sprintf("to another host (%s)", target))
	case hop >= maxRedirects:
		return nil, refuse(fmt.Sprintf("to %s: more than %d redirects", target, maxRedirects))
	case status != http.StatusTemporaryRedirect && status != http.StatusPermanentRedirect &&
		x.Method != http.MethodGet && x.Method != http.MethodHead:
		return nil, refuse(fmt.Sprintf("to %s: it would turn the %s into a GET", target, x.Method))
	}
	to.User, to.Fragment, to.RawFragment = nil, "", ""
	next := x
	next.URL = to.String()
	return &next, nil
}

// sameHost reports whether to names the host and port of from, or is the
// upgrade of from's http URL to https on the same host (port 80 to 443).
func sameHost(from, to *url.URL) bool {
	if !strings.EqualFold(from.Hostname(), to.Hostname()) {
		return false
	}
	fp, tp := portOf(from), portOf(to)
	if from.Scheme == to.Scheme {
		return fp == tp
	}
	return from.Scheme == "http" && to.Scheme == "https" && (fp == tp || fp == "80" && tp == "443")
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// hostForMessage is the target host (and port) as an error names it:
// bounded, never the path or query.
func hostForMessage(u *url.URL) string {
	h := u.Host
	if len(h) > 100 {
		h = h[:100] + "…"
	}
	return strconv.Quote(h)
}

// maxRegates bounds how often one request asks Limiter.Wait again because its
// permit expired before a connection was ready.
const maxRegates = 8

// sendGuard holds one request to its permit while net/http gets a
// connection. When the connection is ready (httptrace's GotConn, which
// net/http reports just before it writes the request) the permit's
// deadline is checked; a late request calls Limiter.Wait again — keeping its
// connection — until it holds a permit it can still use, and a request the
// transport is about to send again (after writing it once) gets a new
// permit too. When Wait refuses, the request's context is cancelled and
// its connection closed, so that nothing is written.
//
// Once written, a request must also reach the provider within its permit:
// if, arrivalCheck past the permit's deadline, it is unanswered and the
// kernel still holds bytes of it that the provider has not acknowledged
// (a cut link keeps them in TCP retransmission), the connection is reset
// (SO_LINGER 0, which drops them) and the request fails as Transient. It
// may have arrived, so the limiter keeps counting it as sent (it was
// reported written); what it can no longer do is arrive late, together
// with the calls the link held back with it.
type sendGuard struct {
	b      *Base
	ctx    context.Context
	call   permit.Call
	cancel context.CancelCauseFunc
	permit permit.Permit // used by GotConn only: net/http calls it from the RoundTrip goroutine
	wrote  atomic.Bool
	// guarded: the connection makes the last check itself
	// (guardedConn), and reports the write to the tracker.
	guarded atomic.Bool
	err     error // Wait's refusal; read after the client returned

	mu      sync.Mutex
	leaving permit.SendTracker   // the tracker of the permit the request left on
	left    []permit.SendTracker // every tracker whose request left, for done

	amu      sync.Mutex  // guards the arrival check's fields below
	conn     net.Conn    // the connection the request leaves on
	deadline time.Time   // its permit's deadline (the zero time: none)
	arrival  *time.Timer // checks the written request's arrival
	answered bool        // a first response byte came
	finished bool        // the round trip ended
	lost     *Error      // the connection was reset by the arrival check

	// writeChecked is when beforeWrite last checked the permit (the
	// writing goroutine's own: beforeWrite and afterWrite).
	writeChecked time.Time
}

func (g *sendGuard) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn:              g.gotConn,
		WroteHeaders:         g.wroteHeaders,
		WroteRequest:         g.wroteRequest,
		GotFirstResponseByte: g.gotFirstResponseByte,
	}
}

// wroteRequest arms the arrival check of a request written on a TCP
// connection under a permit with a deadline.
func (g *sendGuard) wroteRequest(info httptrace.WroteRequestInfo) {
	if info.Err != nil {
		return
	}
	g.amu.Lock()
	defer g.amu.Unlock()
	tc := tcpConnOf(g.conn)
	if tc == nil || g.deadline.IsZero() || g.answered || g.finished {
		return
	}
	if g.arrival != nil {
		g.arrival.Stop()
	}
	deadline := g.deadline
	g.arrival = time.AfterFunc(max(deadline.Sub(g.b.now())+arrivalCheck(tc), 0), func() { g.checkArrival(tc, deadline) })
}

// checkArrival resets the connection of a request still unanswered with
// bytes the provider has not acknowledged, past its permit's deadline.
func (g *sendGuard) checkArrival(tc *net.TCPConn, deadline time.Time) {
	g.amu.Lock()
	defer g.amu.Unlock()
	if g.answered || g.finished {
		return
	}
	n, ok := unacked(tc)
	if !ok || n == 0 {
		return // it arrived (or the kernel cannot tell): wait for the answer
	}
	g.lost = &Error{Class: Transient, Provider: g.b.provider.ID, Dataset: g.call.Dataset,
		Message: fmt.Sprintf("%d bytes of the request were still unacknowledged by the provider %s after its permit's deadline; "+
			"the connection was reset so that they cannot arrive late (the call counts as sent)", n, g.b.now().Sub(deadline).Round(time.Millisecond))}
	// Linger 0 before the transport sees the cancellation and closes the
	// connection itself: any close then drops the unsent bytes.
	_ = tc.SetLinger(0)
	g.cancel(g.lost)
	abortConn(tc)
}

// gotFirstResponseByte ends the arrival check: the provider answered.
func (g *sendGuard) gotFirstResponseByte() {
	g.amu.Lock()
	defer g.amu.Unlock()
	g.answered = true
	if g.arrival != nil {
		g.arrival.Stop()
	}
}

// lostErr is the arrival check's error, if it reset the connection.
func (g *sendGuard) lostErr() *Error {
	g.amu.Lock()
	defer g.amu.Unlock()
	return g.lost
}

func (g *sendGuard) wroteHeaders() {
	g.wrote.Store(true)
	if g.guarded.Load() {
		return // the connection reported the write (beforeWrite)
	}
	g.reportWrite(g.b.now())
}

// reportWrite tells the tracker of the permit the request left on that it
// was written at now.
func (g *sendGuard) reportWrite(now time.Time) {
	g.mu.Lock()
	t := g.leaving
	g.leaving = nil
	g.mu.Unlock()
	if t != nil {
		t.Wrote(now)
	}
}

// leave passes the permit's tracker its last check; true without one.
func (g *sendGuard) leave() bool {
	t := g.permit.Track
	if t == nil {
		return true
	}
	if !t.Leave(g.b.now()) {
		return false
	}
	g.mu.Lock()
	g.leaving = t
	g.left = append(g.left, t)
	g.mu.Unlock()
	return true
}

// done tells every tracker whose request left that its round trip ended,
// and ends the arrival check.
func (g *sendGuard) done() {
	g.amu.Lock()
	g.finished = true
	if g.arrival != nil {
		g.arrival.Stop()
	}
	g.amu.Unlock()
	g.mu.Lock()
	left := g.left
	g.left, g.leaving = nil, nil
	g.mu.Unlock()
	for _, t := range left {
		t.Done(g.b.now())
	}
}

func (g *sendGuard) gotConn(info httptrace.GotConnInfo) {
	if g.err != nil {
		g.stop(info.Conn, g.err)
		return
	}
	for n := 0; g.wrote.Load() || g.late() || !g.leave(); n++ {
		if n == maxRegates {
			g.stop(info.Conn, &Error{Class: Transient, Provider: g.b.provider.ID, Dataset: g.call.Dataset,
				Message: fmt.Sprintf("every permit expired before its request could leave (%d asked for)", n)})
			return
		}
		if !g.wrote.Load() {
			g.b.log.Info("permit expired before the connection was ready; waiting for another",
				"dataset", g.call.Dataset, "kind", g.call.Kind, "late_by", g.b.now().Sub(g.permit.Deadline), "reused", info.Reused)
		}
		p, err := g.b.limiter.Wait(g.ctx, g.call)
		if err != nil {
			g.stop(info.Conn, err)
			return
		}
		g.permit = p
		g.wrote.Store(false)
	}
	g.amu.Lock()
	g.conn, g.deadline = info.Conn, g.permit.Deadline
	g.amu.Unlock()
	if gc := guardedConnOf(info.Conn); gc != nil {
		g.guarded.Store(true)
		gc.arm(g)
	}
}

// beforeWrite is the last check, made by the connection itself just before
// the request's first bytes go to the kernel (guardedConn.Write): net/http
// writes from a goroutine of its own, which a loaded machine may not run
// for a while after GotConn, so the clock is read again after every other
// step and a permit whose deadline passed by then is not used — the
// request asks Limiter.Wait again and is written inside the new permit. A
// non-nil error means nothing may be written: the request is cancelled.
func (g *sendGuard) beforeWrite() error {
	for n := 0; ; n++ {
		g.amu.Lock()
		g.deadline = g.permit.Deadline
		g.amu.Unlock()
		g.mu.Lock()
		t := g.leaving
		g.leaving = nil
		g.mu.Unlock()
		now := g.b.now()
		late := !g.permit.Deadline.IsZero() && now.After(g.permit.Deadline)
		if !late {
			// The tracker hears of the write before the last check: it
			// takes the limiter client's lock, a step that may wait.
			if t != nil {
				t.Wrote(now)
			}
			now = g.b.now() // the last step before the write
			if g.permit.Deadline.IsZero() || !now.After(g.permit.Deadline) {
				g.writeChecked = now
				return nil
			}
		}
		g.abandon(t, now)
		if n == maxRegates {
			err := &Error{Class: Transient, Provider: g.b.provider.ID, Dataset: g.call.Dataset,
				Message: fmt.Sprintf("every permit expired before its request could be written (%d asked for)", n)}
			g.err = err
			g.cancel(err)
			return err
		}
		// A warning: the process stalled for longer than the permit's
		// slack between two of its own steps (a loaded machine).
		g.b.log.Warn("permit expired between the connection's readiness and the write (the process stalled); waiting for another",
			"dataset", g.call.Dataset, "kind", g.call.Kind, "late_by", now.Sub(g.permit.Deadline))
		for {
			p, err := g.b.limiter.Wait(g.ctx, g.call)
			if err != nil {
				g.err = err
				g.cancel(err)
				return err
			}
			g.permit = p
			if !g.late() && g.leave() {
				break
			}
		}
	}
}

// afterWrite warns when the write that beforeWrite let through returned
// past the permit's deadline: the process stalled inside the write itself
// (the request may have left late).
func (g *sendGuard) afterWrite(local string) {
	now := g.b.now()
	deadline := g.permit.Deadline
	if !deadline.IsZero() && now.After(deadline) {
		g.b.log.Warn("a request's write returned after its permit's deadline (the process stalled inside it)", "dataset", g.call.Dataset,
			"kind", g.call.Kind, "late_by", now.Sub(deadline), "checked_before_deadline", deadline.Sub(g.writeChecked), "local", local)
	}
}

// abandon ends the tracker t of a permit that left (Leave) but whose
// request is not written on it: its round trip ended at now (it counts as
// written, which only spaces this process's next call further).
func (g *sendGuard) abandon(t permit.SendTracker, now time.Time) {
	if t == nil {
		return
	}
	g.mu.Lock()
	if len(g.left) > 0 {
		// leave appended it last (trackers need not be comparable).
		g.left = g.left[:len(g.left)-1]
	}
	g.mu.Unlock()
	t.Done(now)
}

// late reports whether the permit's deadline has passed.
func (g *sendGuard) late() bool {
	return !g.permit.Deadline.IsZero() && g.b.now().After(g.permit.Deadline)
}

// stop makes sure the request is not written: it records why, cancels the
// request and closes its connection (which an HTTP/1.1 request holds
// alone; an HTTP/2 connection, shared with other requests, is left open).
func (g *sendGuard) stop(conn net.Conn, err error) {
	g.err = err
	g.cancel(err)
	if tc, ok := conn.(*tls.Conn); ok && tc.ConnectionState().NegotiatedProtocol == "h2" {
		return
	}
	if conn != nil {
		conn.Close()
	}
}

// Codes of the failures a connector's own bounds (registry.Bounds) cause.
const (
	// CodeTooLarge: a page, or an object of several pages, grew beyond
	// its bound (bounds.max_page_mib, bounds.max_object_mib). Its class
	// is BadRequest — not retryable: the same request brings the same
	// bytes — until a person raises the bound or splits the range.
	CodeTooLarge = "too_large"
	// CodePageTimeout: a page's body did not arrive in full within its
	// deadline (bounds.page_timeout_seconds). Transient.
	CodePageTimeout = "page_timeout"
)

// readFailure classifies an error reading a response body: beyond the
// page's size bound is BadRequest (CodeTooLarge); past the page's deadline,
// a stall, a truncated or reset body, an encoding we cannot decode are
// Transient.
func (b *Base) readFailure(call permit.Call, status int, err error, reqCtx context.Context, bounds registry.Bounds, g *bodyGuard, clock *pageClock) *Error {
	cause := context.Cause(reqCtx)
	switch {
	case errors.Is(err, errTooLarge) || errors.Is(cause, errTooLarge):
		return b.Fail(call, status, &Error{Class: BadRequest, Code: CodeTooLarge,
			Message: fmt.Sprintf("the answer is larger than %s, the most one page may hold (bounds.max_page_mib; counted decoded, after any Content-Encoding): "+
				"a provider answering more than any page of this dataset should hold; raise the bound if the answer is right", FormatBytes(bounds.PageBytes))})
	case errors.Is(err, errPageTimeout) || errors.Is(cause, errPageTimeout):
		return b.Fail(call, status, &Error{Class: Transient, Code: CodePageTimeout,
			Message: fmt.Sprintf("the answer did not arrive within %s, the most one page may take (bounds.page_timeout_seconds): %s of it read in %s",
				bounds.PageTimeout, FormatBytes(g.n), clock.elapsed().Round(time.Second))})
	}
	msg := "reading response body"
	switch {
	case errors.Is(cause, errStalled):
		msg = fmt.Sprintf("response body made no progress for %s", b.stall)
	case errors.Is(err, io.ErrUnexpectedEOF):
		msg = "response body truncated"
	case errors.Is(err, errEncoding):
		msg = "decoding response body"
	}
	return b.Fail(call, status, &Error{Class: Transient, Message: msg, Err: err})
}

// FormatBytes writes a byte count for a message: "64 MiB", "1.5 KiB",
// "12 bytes" (four significant digits).
func FormatBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	v, units := float64(n)/1024, []string{"KiB", "MiB", "GiB", "TiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	return fmt.Sprintf("%.4g %s", v, units[i])
}

// sanitize returns err with every known secret redacted from its message
// and from the message of every error it wraps (see redactedError). A
// *url.Error stays a *url.Error, with its URL redacted.
func (b *Base) sanitize(err error) error { return sanitizeChain(err, b.secrets.Values()) }

func sanitizeChain(err error, sec []string) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *url.Error:
		return &url.Error{Op: e.Op, URL: RedactURL(e.URL, sec...), Err: sanitizeChain(e.Err, sec)}
	case *redactedError:
		// Sanitized before, perhaps with fewer known secrets.
		return &redactedError{msg: Redact(e.msg, sec...), next: sanitizeChain(e.next, sec), orig: e.orig}
	}
	return &redactedError{msg: Redact(err.Error(), sec...), next: sanitizeChain(errors.Unwrap(err), sec), orig: err}
}

// redactedError is one link of a sanitized error chain: the original's
// message redacted, unwrapping to the sanitized copy of what the original
// wraps — never to the original itself, whose message (a transport error
// quoting the request line, say) may spell out a key, and which anything
// that follows Unwrap would reach: Temporal's failure converter records
// every link of a chain in the workflow history. errors.Is still sees the
// original chain (context.DeadlineExceeded, io.ErrUnexpectedEOF, …), as
// does a Timeout check, but errors.As finds only the sanitized links.
type redactedError struct {
	msg  string
	next error // sanitized
	orig error
}

// Error returns the redacted message.
func (e *redactedError) Error() string { return e.msg }

// Unwrap returns the sanitized copy of the error the original wraps.
func (e *redactedError) Unwrap() error { return e.next }

// Is reports whether the original chain matches target.
func (e *redactedError) Is(target error) bool { return errors.Is(e.orig, target) }

// Timeout reports whether the original is a timeout (net.Error).
func (e *redactedError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.orig, &t) && t.Timeout()
}

func (b *Base) observeCall(ctx context.Context, o permit.Observation) {
	if b.limiter != nil {
		b.limiter.Observe(ctx, o)
	}
}

func (b *Base) logCall(ctx context.Context, x Exchange, red string, status int, err error, took time.Duration) {
	level := slog.LevelDebug
	attrs := []slog.Attr{
		slog.String("dataset", x.Call.Dataset), slog.String("kind", x.Call.Kind),
		slog.String("method", x.Method), slog.String("url", red), slog.Int("status", status),
		slog.Duration("took", took),
	}
	if x.Call.Probe {
		attrs = append(attrs, slog.Bool("probe", true))
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			attrs = append(attrs, slog.String("class", e.Class.String()), slog.String("code", e.Code))
			if e.Class != NoData {
				level = slog.LevelWarn
			}
		}
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	b.log.LogAttrs(ctx, level, "provider call", attrs...)
}

func selectHeaders(h http.Header) http.Header {
	out := http.Header{}
	for _, k := range SelectedHeaders {
		if vs := h.Values(k); len(vs) > 0 {
			out[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
		}
	}
	return out
}

// extOf decides the stored file extension: the body's first byte, else the
// content type, else the format asked.
func extOf(head []byte, contentType, format string) string {
	if s := Sniff(head); s != "" {
		return s
	}
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		switch {
		case strings.HasSuffix(mt, "json"):
			return "json"
		case strings.HasSuffix(mt, "xml"):
			return "xml"
		}
	}
	if format == "xml" {
		return "xml"
	}
	return "json"
}
