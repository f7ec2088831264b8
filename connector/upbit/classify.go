package upbit

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// Waits after throttling answers without Retry-After.
const (
	// RateLimitWait: the limits are per second.
	RateLimitWait = time.Second
	// DefaultBlock is assumed for a 418 that names no block time; the
	// real block grows with every repeat.
	DefaultBlock = time.Minute
	// OriginWait: requests carrying an Origin header are allowed one per
	// ten seconds (Remaining-Req group=origin, UPBIT's FAQ), so a 429 in
	// that group waits ten seconds, not one.
	OriginWait = 10 * time.Second
)

// authNames are the 401 error names UPBIT documents.
var authNames = map[string]bool{
	"invalid_query_payload": true, "jwt_verification": true, "expired_access_key": true,
	"nonce_used": true, "no_authorization_i_p": true, "out_of_scope": true,
}

// unsureAuth are the 401 names that speak of one signed request rather
// than of the key: a query hash the client built wrong (pyupbit issue 85:
// an old client version, while the same key's balance calls worked), a
// nonce seen twice (two workers racing). A key that is truly bad answers
// them every time, so they are AuthFailed only once confirmed (Confirm).
// A signature refused (jwt_verification: UPBIT's JWT carries no time, so
// only a wrong secret fails it, every time), an expired key, an IP not
// allowed or a scope missing are the key's own state and final at once. A
// 401 that names nothing is confirmed too.
var unsureAuth = map[string]bool{"invalid_query_payload": true, "nonce_used": true, "": true}

// envelope is what the head of an UPBIT answer says.
type envelope struct {
	name, message string
	rootArray     bool
	emptyArray    bool
}

func readEnvelope(head []byte) envelope {
	var env envelope
	connector.WalkJSON(head, func(ev connector.JSONEvent) bool {
		switch {
		case len(ev.Path) == 0 && ev.Token == json.Delim('['):
			env.rootArray = true
		case len(ev.Path) == 0 && ev.Token == json.Delim(']'):
			env.emptyArray = ev.Empty
		case ev.At("error", "name"):
			env.name = ev.String()
		case ev.At("error", "message"):
			env.message = ev.String()
		case env.rootArray:
			return false // candles are data
		}
		return true
	})
	return env
}

// Classify decides an UPBIT answer: 200 with an empty array is NoData; 429
// RateLimited (Retry-After, else a second); 418 Blocked until Retry-After,
// or a time the message names, or DefaultBlock; 401 AuthFailed (confirmed
// first when it speaks of one request: unsureAuth); other 4xx BadRequest;
// 5xx Transient. The Code is the error name when the body gives one (a
// number too: a wrong market answers {"error":{"name":404,...}}), else
// the status; the message is the body's error.message, or a plain-text
// body's own words.
func Classify(h connector.Head) connector.Verdict {
	v := classify(h)
	v.Remaining = remainingOf(h.Header)
	return v
}

func classify(h connector.Head) connector.Verdict {
	env, format := connector.ReadEnvelope(h.Bytes, readEnvelope, nil)
	isJSON := format == "json"
	if h.Status >= 200 && h.Status <= 299 {
		if !isJSON {
			return connector.Fail(connector.Transient, "", "expected a JSON answer, got: "+connector.Snippet(h.Bytes, 160))
		}
		if env.name != "" {
			return connector.Fail(connector.BadRequest, env.name, env.message)
		}
		if env.rootArray && env.emptyArray {
			return connector.Fail(connector.NoData, "", "no candles in the range")
		}
		return connector.Verdict{}
	}
	code := env.name
	if code == "" {
		code = strconv.Itoa(h.Status)
	}
	msg := env.message
	if msg == "" && !isJSON {
		// UPBIT answers a throttled request with plain text ("Too many API
		// requests."); its words are the message.
		msg = connector.Snippet(h.Bytes, 160)
	}
	if msg == "" {
		msg = http.StatusText(h.Status)
	}
	switch {
	case h.Status == http.StatusTooManyRequests:
		v := connector.Fail(connector.RateLimited, code, msg)
		v.Err.RetryAfter = RateLimitWait
		if r := remainingOf(h.Header); r != nil && r.Group == "origin" {
			v.Err.RetryAfter = OriginWait
		}
		if d, ok := connector.RetryAfter(h.Header, h.Now); ok {
			v.Err.RetryAfter = d
		}
		return v
	case h.Status == http.StatusTeapot:
		d, ok := connector.RetryAfter(h.Header, h.Now)
		if !ok {
			d, ok = blockFromMessage(msg)
		}
		if !ok {
			d = DefaultBlock
		}
		d = min(d, connector.MaxWait)
		v := connector.Fail(connector.Blocked, code, msg)
		v.Err.Until = h.Now.Add(d)
		return v
	case h.Status == http.StatusUnauthorized || authNames[env.name]:
		v := connector.Fail(connector.AuthFailed, code, msg)
		if unsureAuth[env.name] {
			v.Err.Confirm = connector.DefaultConfirm
		}
		return v
	}
	v := connector.StatusVerdict(h, RateLimitWait)
	v.Err.Code = code
	if env.message != "" {
		v.Err.Message = env.message
	}
	return v
}

// blockTime finds "N초", "N seconds", "N sec" or "Ns" in a 418 message.
var blockTime = regexp.MustCompile(`(\d{1,6})\s*(초|seconds?|secs?|s\b)`)

func blockFromMessage(msg string) (time.Duration, bool) {
	m := blockTime.FindStringSubmatch(strings.ToLower(msg))
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 {
		return 0, false
	}
	return min(time.Duration(n)*time.Second, connector.MaxWait), true
}

// Groups are the rate-limit groups UPBIT documents. Remaining-Req names
// the group of each answer; any other name is reported as "other", so that
// a provider-controlled string never becomes an unbounded metrics label.
var Groups = []string{"candles", "market", "trades", "ticker", "orderbook", "default", "order", "order-cancel-all", "origin"}

// remainingOf reads Remaining-Req for Observe: what is left of the group's
// current second. nil when the header is absent or unreadable.
func remainingOf(h http.Header) *permit.Remaining {
	v := h.Get("Remaining-Req")
	if v == "" {
		return nil
	}
	rr, err := ParseRemainingReq(v)
	if err != nil {
		return nil
	}
	group := "other"
	for _, g := range Groups {
		if strings.EqualFold(rr.Group, g) {
			group = g
			break
		}
	}
	return &permit.Remaining{Group: group, Left: rr.Sec, Window: time.Second}
}
