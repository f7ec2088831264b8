package kis

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/connector"
)

// Codes the KIS gateway answers with, in msg_cd (data calls) or error_code
// (token calls).
const (
	CodeRateLimited   = "EGW00201" // more calls a second than the app key allows
	CodeTokenInvalid  = "EGW00121" // invalid token
	CodeTokenExpired  = "EGW00123" // expired token
	CodeTokenThrottle = "EGW00133" // token issued more than once a minute
)

// codeClasses classifies gateway codes. The EGW00201/121/123/133 entries
// are documented wire facts; the others are (obs.) from public client code
// and easy to change here.
var codeClasses = map[string]connector.Class{
	CodeRateLimited:   connector.RateLimited,
	CodeTokenThrottle: connector.RateLimited,
	CodeTokenInvalid:  connector.AuthFailed,
	CodeTokenExpired:  connector.AuthFailed,
	"EGW00122":        connector.AuthFailed, // (obs.) token not found
	"EGW00102":        connector.AuthFailed, // (obs.) app key missing
	"EGW00103":        connector.AuthFailed, // (obs.) invalid app key
	"EGW00104":        connector.AuthFailed, // (obs.) app secret missing
	"EGW00105":        connector.AuthFailed, // (obs.) invalid app secret
	"EGW00001":        connector.Transient,  // (obs.) temporary error
	"EGW00002":        connector.Transient,  // (obs.) server error
}

// Waits after a throttling answer.
const (
	rateLimitWait     = time.Second // the limit is per second
	tokenThrottleWait = time.Minute // one token a minute
)

// tokenRejected reports whether a gateway code means the access token was
// not accepted and a new one should be tried.
func tokenRejected(code string) bool {
	return code == CodeTokenInvalid || code == CodeTokenExpired || code == "EGW00122"
}

// noDataWords are the msg1 wordings of an answer that found no rows: KIS
// sends them with rt_cd "7" (python-kis reads rt_cd 7 as "nothing found")
// and at times with rt_cd "1"; rt_cd "7" also carries order refusals, so
// the words decide, not the rt_cd.
var noDataWords = []string{"조회할 자료가 없습니다", "조회할 내용이 없습니다", "조회된 데이터가 없습니다", "조회 자료가 없습니다"}

func saysNoData(msg string) bool {
	for _, w := range noDataWords {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}

// envelope is what the head of a KIS answer says.
type envelope struct {
	hasRtCd     bool
	rtCd        string
	msgCd       string
	msg1        string
	errCode     string
	errDesc     string
	arrays      int // output* arrays that ended inside the head
	emptyArrays int
	nonEmpty    bool // an output* array has an element
}

func readEnvelope(head []byte) envelope {
	var env envelope
	connector.WalkJSON(head, func(ev connector.JSONEvent) bool {
		if len(ev.Path) >= 2 && strings.HasPrefix(ev.Path[0], "output") && ev.Path[1] == "[]" {
			// Rows: the answer has data. The envelope (rt_cd, msg_cd,
			// msg1) comes first, so nothing after the rows is needed.
			env.nonEmpty = true
			return !env.hasRtCd
		}
		if len(ev.Path) != 1 {
			return true
		}
		switch k := ev.Path[0]; k {
		case "rt_cd":
			env.hasRtCd, env.rtCd = true, ev.String()
		case "msg_cd":
			env.msgCd = ev.String()
		case "msg1":
			env.msg1 = ev.String()
		case "error_code":
			env.errCode = ev.String()
		case "error_description":
			env.errDesc = ev.String()
		default:
			if strings.HasPrefix(k, "output") && ev.Token == json.Delim(']') {
				env.arrays++
				if ev.Empty {
					env.emptyArrays++
				}
			}
		}
		return true
	})
	return env
}

func (e envelope) code() string {
	if e.msgCd != "" {
		return e.msgCd
	}
	return e.errCode
}

func (e envelope) message() string {
	m := strings.TrimSpace(e.msg1)
	if m == "" {
		m = strings.TrimSpace(e.errDesc)
	}
	return m
}

// classify decides a data call's outcome. KIS reports throttling and token
// errors in the body, with HTTP 500 or 200 alike, so the body is read
// before the status: rt_cd "0" is success; msg_cd EGW00201 is RateLimited;
// EGW00121/EGW00122/EGW00123 are AuthFailed (the connector replaces the
// token once, and confirms the refusal of new tokens itself: see
// Connector.send); another rt_cd on HTTP 200 is NoData when msg1 says nothing was
// found ("조회할 자료가 없습니다"), else BadRequest. An answer whose output
// arrays all closed empty inside the head is NoData. A response header
// tr_cont of M or F means more pages. The provider's msg_cd and msg1 are
// kept in every error.
func classify(h connector.Head) connector.Verdict {
	env, format := connector.ReadEnvelope(h.Bytes, readEnvelope, nil)
	isJSON := format == "json"
	code := env.code()
	if c, ok := codeClasses[code]; ok && (code != "" && (!env.hasRtCd || env.rtCd != "0")) {
		v := connector.Fail(c, code, env.message())
		switch {
		case code == CodeRateLimited:
			v.Err.RetryAfter = retryAfter(h, rateLimitWait)
		case code == CodeTokenThrottle:
			v.Err.RetryAfter = retryAfter(h, tokenThrottleWait)
		}
		return v
	}
	if h.Status < 200 || h.Status > 299 {
		v := connector.StatusVerdict(h, rateLimitWait)
		if code != "" {
			v.Err.Code = code
		}
		if m := env.message(); m != "" {
			v.Err.Message = m
		}
		return v
	}
	if !isJSON {
		return connector.Fail(connector.Transient, "", "expected a JSON envelope, got: "+connector.Snippet(h.Bytes, 160))
	}
	if env.hasRtCd && env.rtCd != "0" {
		if saysNoData(env.message()) {
			return connector.Fail(connector.NoData, code, env.message())
		}
		return connector.Fail(connector.BadRequest, code, env.message())
	}
	if h.Complete && !env.nonEmpty && env.arrays > 0 && env.arrays == env.emptyArrays {
		return connector.Fail(connector.NoData, code, "every output array is empty")
	}
	more := false
	switch strings.ToUpper(strings.TrimSpace(h.Header.Get("tr_cont"))) {
	case "M", "F":
		more = true
	}
	return connector.Verdict{More: more}
}

func retryAfter(h connector.Head, def time.Duration) time.Duration {
	if d, ok := connector.RetryAfter(h.Header, h.Now); ok {
		return d
	}
	return def
}

// tokenAnswer is the token endpoint's answer.
type tokenAnswer struct {
	AccessToken string      `json:"access_token"`
	Expired     string      `json:"access_token_token_expired"`
	TokenType   string      `json:"token_type"`
	ExpiresIn   json.Number `json:"expires_in"`
}

// classifyToken decides a token call's outcome: HTTP 200 with a JSON body
// and no error_code is success, unless the token in it is already expired
// (expiredAnswer); error_code EGW00133 is RateLimited (a
// minute); other refusals are classified by code, else by status (401 and
// 403 AuthFailed). A refusal that names no known code (a 403 from a
// firewall page, an unknown error_code on HTTP 200) is AuthFailed only once
// confirmed (Confirm). No message ever quotes the token answer's body.
func classifyToken(h connector.Head) connector.Verdict {
	env := readEnvelope(h.Bytes)
	code := env.code()
	if h.Status == http.StatusOK && code == "" {
		if connector.Sniff(h.Bytes) != "json" {
			return connector.Fail(connector.Transient, "", "expected a JSON token answer")
		}
		// A token handed back already expired is a failure here, not a
		// success: an answer that issued no usable token must not start
		// the count of ambiguous answers over (Error.Confirm).
		if h.Complete {
			if tok, ok := parseTokenAnswer(h.Bytes, h.Now); ok {
				if e := expiredAnswer(tok, h.Now); e != nil {
					return connector.Verdict{Err: e}
				}
			}
		}
		return connector.Verdict{}
	}
	class, known := codeClasses[code]
	switch {
	case known:
	case h.Status == http.StatusOK:
		class = connector.AuthFailed
	default:
		class = connector.StatusClass(h.Status)
	}
	if code == "" {
		code = strconv.Itoa(h.Status)
	}
	msg := env.message()
	if msg == "" {
		msg = fmt.Sprintf("token request refused with HTTP %d", h.Status)
	}
	v := connector.Fail(class, code, msg)
	if class == connector.RateLimited {
		v.Err.RetryAfter = retryAfter(h, tokenThrottleWait)
	}
	if class == connector.AuthFailed && !known {
		v.Err.Confirm = connector.DefaultConfirm
	}
	return v
}
