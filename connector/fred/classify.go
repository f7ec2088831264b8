package fred

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/connector"
)

// RateLimitWait is how long to wait after a 429 without Retry-After: FRED
// counts about 120 requests a minute (fredr waits 20 s).
const RateLimitWait = 20 * time.Second

// envelope is what the head of a FRED answer says.
type envelope struct {
	errCode     string
	errMessage  string
	count       int64
	hasCount    bool
	emptyResult bool
}

// Classify decides the outcome of an observations answer whose last asked
// row is last. FRED reports errors by status with {"error_code":…,
// "error_message":…} (or <error code="…" message="…"/>): 429 is
// RateLimited; 400 naming api_key, 401 and 403 are AuthFailed (an api_key
// "not registered" only once confirmed: Error.Confirm); other 4xx
// BadRequest; 5xx and 423 Transient, with or without a body. A count of 0 or an empty
// observations array is NoData; a count beyond last means more pages.
func Classify(h connector.Head, last int) connector.Verdict {
	env, sniff := connector.ReadEnvelope(h.Bytes, readJSON, readXML)
	if h.Status < 200 || h.Status > 299 {
		return statusVerdict(h, env)
	}
	if env.errCode != "" || env.errMessage != "" {
		code := env.errCode
		if code == "" {
			code = "error"
		}
		st, _ := strconv.Atoi(code)
		return statusVerdict(connector.Head{Status: st, Header: h.Header, Now: h.Now, Bytes: h.Bytes}, env)
	}
	if sniff == "" {
		return connector.Fail(connector.Transient, "", "expected a JSON or XML answer, got: "+connector.Snippet(h.Bytes, 160))
	}
	if (env.hasCount && env.count == 0) || env.emptyResult {
		return connector.Fail(connector.NoData, "", "no observations in the range")
	}
	return connector.Verdict{More: env.hasCount && env.count > int64(last)}
}

// notRegistered is what FRED says of an api_key it does not know. Under
// bursts it also says it, now and then, of a valid key (fredapi issues 25
// and 45): the answer is ambiguous, and the key counts as broken only once
// connector.DefaultConfirm of them came in a row.
const notRegistered = "is not registered"

func statusVerdict(h connector.Head, env envelope) connector.Verdict {
	msg := strings.TrimSpace(env.errMessage)
	code := strconv.Itoa(h.Status)
	var c connector.Class
	switch {
	case h.Status == http.StatusTooManyRequests:
		c = connector.RateLimited
	case h.Status == http.StatusBadRequest && strings.Contains(msg, "api_key"):
		c = connector.AuthFailed
	case h.Status == http.StatusLocked:
		c = connector.Transient
	case h.Status < 200 || h.Status > 599:
		c = connector.Transient
	default:
		c = connector.StatusClass(h.Status)
	}
	if msg == "" {
		// No FRED error body (an empty 423 or 500, a gateway's page): the
		// status decides, as classified above (423 is Transient, not the
		// BadRequest of a plain 4xx).
		v := connector.StatusVerdict(h, RateLimitWait)
		v.Err.Class = c
		return v
	}
	v := connector.Fail(c, code, msg)
	if c == connector.AuthFailed && strings.Contains(msg, notRegistered) {
		v.Err.Confirm = connector.DefaultConfirm
	}
	if c == connector.RateLimited {
		v.Err.RetryAfter = RateLimitWait
		if d, ok := connector.RetryAfter(h.Header, h.Now); ok {
			v.Err.RetryAfter = d
		}
	}
	return v
}

func readJSON(head []byte) envelope {
	var env envelope
	connector.WalkJSON(head, func(ev connector.JSONEvent) bool {
		if len(ev.Path) >= 2 && ev.Path[0] == "observations" {
			return false // an observation: not empty, and count came first
		}
		if len(ev.Path) != 1 {
			return true
		}
		switch ev.Path[0] {
		case "error_code":
			env.errCode = ev.String()
		case "error_message":
			env.errMessage = ev.String()
		case "count":
			if v, err := strconv.ParseInt(ev.String(), 10, 64); err == nil {
				env.count, env.hasCount = v, true
			}
		case "observations":
			if ev.Token == json.Delim(']') {
				env.emptyResult = ev.Empty
			}
			if ev.Token == json.Delim('[') {
				return true
			}
			return false
		}
		return true
	})
	return env
}

func readXML(head []byte) envelope {
	var env envelope
	connector.WalkXML(head, func(ev connector.XMLEvent) bool {
		if !ev.Start || len(ev.Path) != 1 {
			return len(ev.Path) <= 1
		}
		switch ev.Path[0] {
		case "error":
			env.errCode = ev.AttrValue("code")
			env.errMessage = ev.AttrValue("message")
		case "observations":
			if v, err := strconv.ParseInt(ev.AttrValue("count"), 10, 64); err == nil {
				env.count, env.hasCount = v, true
			}
		}
		return false
	})
	return env
}
