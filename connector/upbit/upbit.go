// Package upbit is the connector for the UPBIT Open API: daily candles
// (public quotation, no key), HS512 JWT signing for exchange endpoints, the
// Remaining-Req header parsed for the rate limiter, and 429/418 classified
// as RateLimited and Blocked.
package upbit

import (
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

// New returns an UPBIT connector.
func New(p *registry.Provider, opts connector.Options) (*Connector, error) {
	return connector.Assemble[Connector](p, opts, connector.Steps{Needs: []string{"market"}, Plan: plan, Probe: probe, Newest: connector.HoldsNewest})
}

// Connector speaks UPBIT: the connector skeleton with UPBIT's plan. A
// probe asks for today's single candle (count=1, the UTC candle day), the
// newest there is.
type Connector struct{ connector.Skeleton }

func init() { connector.Register(Spec, connector.FactoryOf(New)) }

// DaysPath is the daily candles endpoint, the default path.
const DaysPath = "/v1/candles/days"

// MaxCount is the most candles one call returns.
const MaxCount = 200

// quotationPrefixes are the public endpoints, which need no JWT.
var quotationPrefixes = []string{"/v1/candles/", "/v1/market/", "/v1/trades/", "/v1/ticker", "/v1/orderbook"}

// probe asks for today's candle: the UTC candle day.
func probe(b *connector.Base, ds *registry.Dataset) connector.Request {
	today := connector.CivilDate(b.Now().UTC())
	return connector.Request{Dataset: ds, From: today, To: today}
}

// CandleWindow returns the to and count parameters of the daily candles
// covering the civil dates from … to (UTC candle days).
func CandleWindow(from, to time.Time) (toParam string, count int, err error) {
	f, t := connector.CivilDate(from), connector.CivilDate(to)
	if t.Before(f) {
		return "", 0, fmt.Errorf("the range ends (%s) before it starts (%s)", t.Format(time.DateOnly), f.Format(time.DateOnly))
	}
	count = min(int(t.Sub(f).Hours()/24)+1, MaxCount)
	return t.AddDate(0, 0, 1).Format(toLayout), count, nil
}

// toLayout is how the to parameter is written.
const toLayout = "2006-01-02T15:04:05Z"

// cursorWindow returns the count of a page whose exclusive to is the
// cursor: the candle days from from up to the day before it, at most
// MaxCount.
func cursorWindow(from time.Time, cursor string) (time.Time, int, error) {
	to, err := time.Parse(toLayout, cursor)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("cursor %q is not a to time (%s)", cursor, toLayout)
	}
	days := int(to.Sub(connector.CivilDate(from)).Hours() / 24)
	if days < 1 {
		return time.Time{}, 0, fmt.Errorf("cursor %s is not after the range's first day %s", cursor, connector.CivilDate(from).Format(time.DateOnly))
	}
	return to, min(days, MaxCount), nil
}

// plan asks for the daily candles of From … To, civil dates of UTC
// candle days (a candle day runs 00:00–24:00 UTC, 09:00–09:00 KST):
// to = the day after To at 00:00:00 UTC (exclusive), count = the days in
// the range, at most MaxCount. Limit > 0 asks for fewer: the newest Limit
// candles before to. A range of more than MaxCount days comes in pages,
// newest first: Response.Next sets Cursor to the oldest candle of a full
// page (the next page's exclusive to) while that candle is after From.
func plan(b *connector.Base, call permit.Call, req connector.Request) (connector.Plan, error) {
	r := req.Dataset.Request
	bad := func(msg string) error { return &connector.Error{Class: connector.BadRequest, Message: msg} }
	toParam, count, err := CandleWindow(req.From, req.To)
	if err != nil {
		return connector.Plan{}, bad(err.Error())
	}
	if req.Cursor != "" {
		var to time.Time
		if to, count, err = cursorWindow(req.From, req.Cursor); err != nil {
			return connector.Plan{}, bad(err.Error())
		}
		toParam = to.Format(toLayout)
	}
	if req.Limit > 0 && req.Limit < count {
		count = req.Limit
	}
	path := r.Path
	if path == "" {
		path = DaysPath
	}
	q := []registry.Param{{Name: "market", Value: r.Market}, {Name: "to", Value: toParam}, {Name: "count", Value: strconv.Itoa(count)}}
	for _, p := range r.ExpandParams(connector.CivilDate(req.From), connector.CivilDate(req.To)) {
		if !connector.HasParam(q, p.Name) {
			q = append(q, p)
		}
	}
	h := http.Header{}
	h.Set("Accept", "application/json")
	if !quotation(path) {
		auth, err := sign(b, q)
		if err != nil {
			return connector.Plan{}, err
		}
		h.Set("Authorization", auth)
	}
	x := connector.Exchange{Call: call, URL: b.URL((&url.URL{Path: path}).EscapedPath(), connector.EncodeQuery(q)),
		Header: h, Format: "json", Classify: Classify}
	return connector.Plan{Exchange: x, Pages: func(resp *connector.Response) { pages(b, call, req, resp, toParam, count) }}, nil
}

func quotation(path string) bool {
	for _, p := range quotationPrefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// sign returns the Authorization header of an exchange call: an HS512 JWT
// with access_key, a fresh nonce and, when there are parameters, the hex
// SHA-512 of the unescaped query string as query_hash.
func sign(b *connector.Base, q []registry.Param) (string, error) {
	access, err := b.Credential("access_key")
	if err != nil {
		return "", err
	}
	secret, err := b.Credential("secret_key")
	if err != nil {
		return "", err
	}
	claims := jwt.MapClaims{"access_key": access, "nonce": uuid.NewString()}
	if len(q) > 0 {
		raw, err := url.QueryUnescape(connector.EncodeQuery(q))
		if err != nil {
			return "", fmt.Errorf("hashing upbit query: %w", err)
		}
		sum := sha512.Sum512([]byte(raw))
		claims["query_hash"] = hex.EncodeToString(sum[:])
		claims["query_hash_alg"] = "SHA512"
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS512, claims).SignedString([]byte(secret))
	if err != nil {
		return "", fmt.Errorf("signing upbit request: %w", err)
	}
	// The JWT travels only in the Authorization header, which is never
	// logged; it is not added to the redaction set, which would grow with
	// every call.
	return "Bearer " + tok, nil
}

// Endpoint is the dataset's request.path, DaysPath by default.
func (c *Connector) Endpoint(ds *registry.Dataset) string {
	if ds != nil && ds.Request.Path != "" {
		return ds.Request.Path
	}
	return DaysPath
}
