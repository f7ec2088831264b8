package connector

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/version"
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
	gate     func(context.Context, Call) error
	observe  func(Call, int, http.Header, error)
	creds    Credentials
	secrets  *Secrets
	stall    time.Duration
	store    TokenStore
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
		gate:     opts.Gate,
		observe:  opts.Observe,
		creds:    opts.Credentials,
		secrets:  &Secrets{},
		stall:    opts.StallTimeout,
		store:    opts.TokenStore,
	}
	if b.client == nil {
		b.client = HTTPClient()
	}
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
func (b *Base) Dataset(req Request, probe bool) (Call, *registry.Dataset, *Error) {
	call := Call{Provider: b.provider.ID, Kind: CallData, Probe: probe}
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

// Fail completes a classifier's or connector's error: provider, dataset,
// status, and the message and underlying error redacted (see sanitize).
func (b *Base) Fail(call Call, status int, e *Error) *Error {
	e.Provider = b.provider.ID
	if e.Dataset == "" {
		e.Dataset = call.Dataset
	}
	if e.Status == 0 {
		e.Status = status
	}
	e.Message = b.secrets.Redact(e.Message)
	e.Err = b.sanitize(e.Err)
	return e
}

// Exchange is one request for Base.Do.
type Exchange struct {
	Call   Call        // what the call is, for the gate, observer and logs
	Method string      // GET when empty
	URL    string      // the full URL, secrets included
	Header http.Header // request headers; may hold secrets and are never logged
	Body   []byte      // request body; may hold secrets and is never logged
	// Format is the format asked of the provider, "json" or "xml"; it
	// decides Response.Ext when neither body nor content type do.
	Format string
	// Classify decides the outcome from the head of the answer.
	Classify func(Head) Verdict
}

// errStalled is the cancel cause of a body that made no progress.
var errStalled = errors.New("response body stalled")

// Do sends one request: Gate, the HTTP exchange, a peek at the head of the
// body, Classify, Observe, a log line, and on success a Response whose Body
// yields every byte of the body. On failure the body is closed and the
// classified error (or the caller's context error) returned.
func (b *Base) Do(ctx context.Context, x Exchange) (*Response, error) {
	red := b.secrets.RedactURL(x.URL)
	method := x.Method
	if method == "" {
		method = http.MethodGet
	}
	if b.gate != nil {
		if err := b.gate(ctx, x.Call); err != nil {
			return nil, fmt.Errorf("waiting for the rate limiter before %s %s call: %w", b.provider.ID, x.Call.Kind, err)
		}
	}
	reqCtx, cancel := context.WithCancelCause(ctx)
	var body io.Reader
	if x.Body != nil {
		body = bytes.NewReader(x.Body)
	}
	req, err := http.NewRequestWithContext(reqCtx, method, x.URL, body)
	if err != nil {
		cancel(nil)
		return nil, b.Fail(x.Call, 0, &Error{Class: BadRequest, Message: "building request for " + red, Err: err})
	}
	for k, vs := range x.Header {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", version.UserAgent())
	start := time.Now()
	resp, err := b.client.Do(req)
	if err != nil {
		cancel(nil)
		if ctx.Err() != nil {
			b.observeCall(x.Call, 0, nil, ctx.Err())
			return nil, fmt.Errorf("sending %s request %s: %w", b.provider.ID, red, context.Cause(ctx))
		}
		e := b.Fail(x.Call, 0, &Error{Class: Transient, Message: "sending request", Err: err})
		b.observeCall(x.Call, 0, nil, e)
		b.logCall(ctx, x, method, red, 0, e, time.Since(start))
		return nil, e
	}
	guard := newStallGuard(resp.Body, b.stall, func() { cancel(errStalled) })
	br := bufio.NewReaderSize(guard, HeadSize)
	head, perr := br.Peek(HeadSize)
	complete := false
	switch {
	case perr == nil:
	case errors.Is(perr, io.EOF):
		complete = true
	default:
		guard.stop()
		resp.Body.Close()
		cancel(nil)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reading %s response %s: %w", b.provider.ID, red, context.Cause(ctx))
		}
		e := b.readFailure(x.Call, resp.StatusCode, perr, reqCtx)
		b.observeCall(x.Call, resp.StatusCode, resp.Header, e)
		b.logCall(ctx, x, method, red, resp.StatusCode, e, time.Since(start))
		return nil, e
	}
	v := Verdict{Err: &Error{Class: Transient, Message: "no classifier"}}
	if x.Classify != nil {
		v = x.Classify(Head{Status: resp.StatusCode, Header: resp.Header, Bytes: head, Complete: complete,
			Format: x.Format, Now: b.now(), Location: b.Location()})
	}
	var verr error
	if v.Err != nil {
		verr = b.Fail(x.Call, resp.StatusCode, v.Err)
	}
	b.observeCall(x.Call, resp.StatusCode, resp.Header, verr)
	b.logCall(ctx, x, method, red, resp.StatusCode, verr, time.Since(start))
	if verr != nil {
		// Read a small error body to its end so the connection is reused.
		io.CopyN(io.Discard, br, maxDrain)
		guard.stop()
		resp.Body.Close()
		cancel(nil)
		return nil, verr
	}
	ct := resp.Header.Get("Content-Type")
	return &Response{
		Body: &responseBody{r: br, raw: resp.Body, guard: guard, cancel: cancel,
			fail: func(err error) error {
				if ctx.Err() != nil {
					return fmt.Errorf("reading %s response %s: %w", b.provider.ID, red, context.Cause(ctx))
				}
				return b.readFailure(x.Call, resp.StatusCode, err, reqCtx)
			}},
		Status:      resp.StatusCode,
		Header:      selectHeaders(resp.Header),
		URL:         red,
		ContentType: ct,
		Ext:         extOf(head, ct, x.Format),
		More:        v.More,
	}, nil
}

// readFailure classifies an error reading a response body: a stall or a
// truncated or reset body is Transient.
func (b *Base) readFailure(call Call, status int, err error, reqCtx context.Context) *Error {
	msg := "reading response body"
	switch {
	case errors.Is(context.Cause(reqCtx), errStalled):
		msg = fmt.Sprintf("response body made no progress for %s", b.stall)
	case errors.Is(err, io.ErrUnexpectedEOF):
		msg = "response body truncated"
	}
	return b.Fail(call, status, &Error{Class: Transient, Message: msg, Err: err})
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

func (b *Base) observeCall(call Call, status int, h http.Header, err error) {
	if b.observe != nil {
		b.observe(call, status, h, err)
	}
}

func (b *Base) logCall(ctx context.Context, x Exchange, method, red string, status int, err error, took time.Duration) {
	level := slog.LevelDebug
	attrs := []slog.Attr{
		slog.String("dataset", x.Call.Dataset), slog.String("kind", x.Call.Kind),
		slog.String("method", method), slog.String("url", red), slog.Int("status", status),
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
