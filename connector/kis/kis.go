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
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

func init() { connector.Register(Spec, connector.FactoryOf(New)) }

// ProbeDays is how many days back a probe asks for.
const ProbeDays = 14

// Connector speaks KIS: the connector skeleton with KIS's steps, and the
// access token they send with. Create one per provider and process and
// share it: concurrent callers wait on a single token refresh.
type Connector struct {
	connector.Skeleton
	store connector.TokenStore

	flight   chan struct{} // one token refresh at a time in this process
	mu       sync.Mutex
	cached   connector.Token
	rejected string // the last token the gateway refused
	// refusals counts the newly issued tokens the gateway refused in a row
	// (EGW00121/122/123), with no data answer between them.
	refusals int
}

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
	c := &Connector{store: store, flight: make(chan struct{}, 1)}
	// A probe asks for the last ProbeDays days of the dataset (one call;
	// KIS answers at most about 50 rows, newest first, so the answer holds
	// the newest row).
	c.Skeleton = connector.NewSkeleton(b, connector.Steps{Needs: []string{"path", "tr_id"}, Plan: c.plan,
		Probe: connector.LastDays(ProbeDays, 0), Newest: connector.HoldsNewest})
	return c, nil
}

// plan asks for the dataset's endpoint with its parameters ({from} and
// {to} filled in: the query of a GET, the JSON body of a POST) and the
// KIS headers; send adds the access token. Page > 1 sends tr_cont: N, the
// continuation of a previous answer whose tr_cont was M or F (the
// response header: the head decides); Response.Next asks for it.
func (c *Connector) plan(b *connector.Base, call permit.Call, req connector.Request) (connector.Plan, error) {
	r := req.Dataset.Request
	appKey, err := b.Credential("app_key")
	if err != nil {
		return connector.Plan{}, err
	}
	appSecret, err := b.Credential("app_secret")
	if err != nil {
		return connector.Plan{}, err
	}
	params := r.ExpandParams(connector.CivilDate(req.From), connector.CivilDate(req.To))
	h := http.Header{}
	h.Set("content-type", "application/json; charset=utf-8")
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
			return connector.Plan{}, fmt.Errorf("encoding kis request body: %w", err)
		}
		x.URL, x.Body = b.URL(path, ""), data
	} else {
		x.URL = b.URL(path, connector.EncodeQuery(params))
	}
	return connector.Plan{Exchange: x, Send: func(ctx context.Context, x connector.Exchange) (*connector.Response, error) {
		return c.send(ctx, x, appKey, appSecret)
	}}, nil
}

// send sends a planned exchange with the access token of the app key. A
// token the gateway rejects (EGW00121, EGW00123) is replaced once and the
// call sent again; the rejection of a token issued for this call is
// AuthFailed once DefaultConfirm such rejections came in a row, Transient
// (waiting for the next token) before. When the replacement would break
// the once-a-minute rule the call fails RateLimited (EGW00133) with the
// wait, and tokenP is not asked.
func (c *Connector) send(ctx context.Context, x connector.Exchange, appKey, appSecret string) (*connector.Response, error) {
	tok, fresh, err := c.token(ctx, appKey, appSecret, "")
	if err != nil {
		return nil, err
	}
	resp, err := c.Base().Do(ctx, bearer(x, tok))
	var e *connector.Error
	if err == nil || !errors.As(err, &e) || !tokenRejected(e.Code) {
		c.answered(err)
		return resp, err
	}
	if fresh {
		c.forget(tok)
		return nil, c.refusedFresh(e)
	}
	c.Base().Logger().Info("kis token rejected; replacing it", "dataset", x.Call.Dataset, "code", e.Code)
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
	resp, err = c.Base().Do(ctx, bearer(x, tok2))
	if err != nil && errors.As(err, &e) && tokenRejected(e.Code) {
		c.forget(tok2)
		return nil, c.refusedFresh(e)
	}
	c.answered(err)
	return resp, err
}

// bearer returns the exchange carrying the access token tok.
func bearer(x connector.Exchange, tok string) connector.Exchange {
	x.Header = x.Header.Clone()
	x.Header.Set("authorization", "Bearer "+tok)
	return x
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

// kst is the timezone of KIS timestamps.
var kst = func() *time.Location {
	if l, err := time.LoadLocation("Asia/Seoul"); err == nil {
		return l
	}
	return time.FixedZone("KST", 9*3600)
}()
