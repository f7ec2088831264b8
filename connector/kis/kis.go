// Package kis is the connector for the Korea Investment & Securities Open
// API (KIS Developers): an OAuth2 access token issued once per validity
// window and app key and shared by every process through a
// connector.TokenStore, quotation GETs with the KIS headers, and the
// rt_cd/msg_cd envelope classified at the boundary.
package kis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/registry"
)

func init() {
	connector.Register(Spec, func(p *registry.Provider, opts connector.Options) (connector.Connector, error) {
		return New(p, opts)
	})
}

// ProbeDays is how many days back a probe asks for.
const ProbeDays = 14

// Connector speaks KIS. Create one per provider and process and share it:
// concurrent callers wait on a single token refresh.
type Connector struct {
	base  *connector.Base
	store connector.TokenStore

	flight   chan struct{} // one token refresh at a time in this process
	mu       sync.Mutex
	cached   connector.Token
	rejected string // the last token the gateway refused
	// refusals counts the newly issued tokens the gateway refused in a row
	// (EGW00121/122/123), with no data answer between them.
	refusals int
}

var _ connector.Connector = (*Connector)(nil)

// New returns a KIS connector. Without Options.TokenStore, tokens are kept
// in this process only (tokenstore.Memory).
func New(p *registry.Provider, opts connector.Options) (*Connector, error) {
	b, err := connector.NewBase(p, opts)
	if err != nil {
		return nil, err
	}
	store := opts.TokenStore
	if store == nil {
		store = tokenstore.NewMemory()
	}
	return &Connector{base: b, store: store, flight: make(chan struct{}, 1)}, nil
}

// Fetch asks for the dataset's endpoint with its parameters ({from} and
// {to} filled in). A token the gateway rejects (EGW00121, EGW00123) is
// replaced once and the call sent again; the rejection of a token issued
// for this call is AuthFailed once DefaultConfirm such rejections came in
// a row, Transient (waiting for the next token) before. When the
// replacement would break the once-a-minute rule the call fails
// RateLimited (EGW00133) with the wait, and tokenP is not asked.
// Page > 1 sends tr_cont: N, the continuation of a previous answer whose
// tr_cont was M or F; Response.Next asks for it.
func (c *Connector) Fetch(ctx context.Context, req connector.Request) (*connector.Response, error) {
	return c.fetch(ctx, req, false)
}

// Probe asks for the last ProbeDays days of the dataset (one call; KIS
// answers at most about 50 rows, newest first, so the answer holds the
// newest row) and returns the answer (connector.ReadProbe).
func (c *Connector) Probe(ctx context.Context, ds *registry.Dataset) (connector.ProbeAnswer, error) {
	today := c.base.Today()
	resp, err := c.fetch(ctx, connector.Request{Dataset: ds,
		From: today.AddDate(0, 0, -ProbeDays), To: today}, true)
	return connector.ReadProbe(resp, err, true)
}

func (c *Connector) fetch(ctx context.Context, req connector.Request, probe bool) (*connector.Response, error) {
	call, ds, derr := c.base.Dataset(req, probe)
	if derr != nil {
		return nil, derr
	}
	if ds.Request.Path == "" || ds.Request.TrID == "" {
		return nil, c.base.Fail(call, 0, &connector.Error{Class: connector.BadRequest,
			Message: "the dataset needs request.path and request.tr_id"})
	}
	appKey, err := c.base.Credential("app_key")
	if err != nil {
		return nil, c.base.Fail(call, 0, connector.AsError(err))
	}
	appSecret, err := c.base.Credential("app_secret")
	if err != nil {
		return nil, c.base.Fail(call, 0, connector.AsError(err))
	}
	tok, fresh, err := c.token(ctx, appKey, appSecret, "")
	if err != nil {
		return nil, err
	}
	resp, err := c.send(ctx, call, req, appKey, appSecret, tok)
	var e *connector.Error
	if err == nil || !errors.As(err, &e) || !tokenRejected(e.Code) {
		c.answered(err)
		return paged(req, resp), err
	}
	if fresh {
		c.forget(tok)
		return nil, c.refusedFresh(e)
	}
	c.base.Logger().Info("kis token rejected; replacing it", "dataset", ds.ID, "code", e.Code)
	tok2, _, err := c.token(ctx, appKey, appSecret, tok)
	if err != nil {
		// The gateway's own words stay in the error (a replacement within
		// the minute is refused locally, EGW00133).
		var te *connector.Error
		if errors.As(err, &te) {
			te.Message += fmt.Sprintf(" (the gateway refused the token: %s %s)", e.Code, e.Message)
		}
		return nil, err
	}
	resp, err = c.send(ctx, call, req, appKey, appSecret, tok2)
	if err != nil && errors.As(err, &e) && tokenRejected(e.Code) {
		c.forget(tok2)
		return nil, c.refusedFresh(e)
	}
	c.answered(err)
	return paged(req, resp), err
}

// refusedFresh handles the gateway's refusal of a token issued for this
// very call. The refusal is disputed: the gateway revokes tokens in its
// maintenance and may refuse one it has only just issued, while tokenP
// accepting the key says the key works. So it is AuthFailed only once
// confirmed: DefaultConfirm newly issued tokens refused in a row. Until
// then it is Transient (Unconfirmed AuthFailed), waiting until tokenP may
// issue the next token. (Base's own count, Error.Confirm, cannot serve:
// every token issued in between is a success that starts it over.)
func (c *Connector) refusedFresh(e *connector.Error) error {
	c.mu.Lock()
	c.refusals++
	n := c.refusals
	if n >= connector.DefaultConfirm {
		c.refusals = 0
	}
	c.mu.Unlock()
	if n >= connector.DefaultConfirm {
		e.Message = fmt.Sprintf("confirmed: %d newly issued tokens refused in a row: %s", n, e.Message)
		return e
	}
	e.Message = fmt.Sprintf("unconfirmed %s (%d of %d): a newly issued token was refused: %s",
		e.Class, n, connector.DefaultConfirm, e.Message)
	e.Unconfirmed, e.Class = e.Class, connector.Transient
	e.RetryAfter = max(e.RetryAfter, connector.ConfirmWait, MinIssueInterval)
	return e
}

// answered starts the count of refused tokens over when the data endpoint
// took the token: rows, no rows, or a refusal of the request itself.
func (c *Connector) answered(err error) {
	if cl, _ := connector.ClassOf(err); err != nil && cl != connector.NoData && cl != connector.BadRequest {
		return // nothing said about the token (throttled, a 5xx, no connection)
	}
	c.mu.Lock()
	c.refusals = 0
	c.mu.Unlock()
}

// paged sets the Next of a successful answer: the response header tr_cont
// M or F (Response.More) asks for the same query again with tr_cont: N,
// the continuation the gateway keeps for it.
func paged(req connector.Request, resp *connector.Response) *connector.Response {
	if resp == nil {
		return nil
	}
	more := resp.More
	resp.Next = connector.NextByPage(req, connector.Watch(resp), func() (bool, error) { return more, nil })
	return resp
}

func (c *Connector) send(ctx context.Context, call connector.Call, req connector.Request, appKey, appSecret, tok string) (*connector.Response, error) {
	r := req.Dataset.Request
	params := r.ExpandParams(connector.CivilDate(req.From), connector.CivilDate(req.To))
	h := http.Header{}
	h.Set("content-type", "application/json; charset=utf-8")
	h.Set("authorization", "Bearer "+tok)
	h["appkey"] = []string{appKey}
	h["appsecret"] = []string{appSecret}
	h["tr_id"] = []string{r.TrID}
	h["custtype"] = []string{"P"}
	if req.PageOrFirst() > 1 {
		h["tr_cont"] = []string{"N"}
	}
	path := (&url.URL{Path: r.Path}).EscapedPath()
	x := connector.Exchange{Call: call, Method: r.Method, Header: h, Format: "json", Classify: classify}
	if r.Method == http.MethodPost {
		body := map[string]string{}
		for _, p := range params {
			body[p.Name] = p.Value
		}
		data, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding kis request body: %w", err)
		}
		x.URL, x.Body = c.base.URL(path, ""), data
	} else {
		x.URL = c.base.URL(path, connector.EncodeQuery(params))
	}
	return c.base.Do(ctx, x)
}

// kst is the timezone of KIS timestamps.
var kst = func() *time.Location {
	if l, err := time.LoadLocation("Asia/Seoul"); err == nil {
		return l
	}
	return time.FixedZone("KST", 9*3600)
}()
