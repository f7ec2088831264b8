package datago

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/connector"
)

// RateLimitWait is how long to wait after code 23 (per-second limit).
const RateLimitWait = time.Second

// codeClasses classifies the portal's reason codes, which come in the
// gateway envelope (returnReasonCode, XML or JSON) and in services' own
// resultCode alike. Unknown codes are Transient. A numeric code is looked
// up in its two-digit spelling (see lookupCode).
var codeClasses = map[string]connector.Class{
	"01": connector.Transient,      // application error
	"02": connector.Transient,      // DB error
	"03": connector.NoData,         // no data
	"04": connector.Transient,      // HTTP error
	"05": connector.Transient,      // service timeout
	"10": connector.BadRequest,     // invalid parameter
	"11": connector.BadRequest,     // required parameter missing
	"12": connector.BadRequest,     // no such service
	"20": connector.AuthFailed,     // access denied
	"21": connector.Transient,      // key temporarily disabled
	"22": connector.QuotaExhausted, // daily quota exceeded
	"23": connector.RateLimited,    // per-second limit exceeded
	"29": connector.AuthFailed,     // blacklisted IP: a person must act
	"30": connector.AuthFailed,     // key not registered (confirmed, see keyNotRegistered)
	"31": connector.AuthFailed,     // key expired
	"32": connector.AuthFailed,     // unregistered IP
	"33": connector.AuthFailed,     // unsigned call
	"99": connector.Transient,      // unknown error
}

// keyNotRegistered is SERVICE_KEY_IS_NOT_REGISTERED_ERROR. Its meaning is
// disputed in the field: the portal answers it for a wrong key or a
// service never applied for (a person must act), but also for a key
// issued or approved minutes ago, until the portal has synchronised it to
// the providing agency's gateway (the portal's FAQ says up to an hour;
// users report days), and in bursts of calls with a key that keeps
// working (throttling that looks like an unregistered key). One such
// answer is no evidence that the key is broken, so the verdict asks for
// connector.DefaultConfirm answers in a row before it holds (issue 22 §2).
const keyNotRegistered = "30"

// envelope is what the head of a data.go.kr answer says.
type envelope struct {
	gateway    bool   // the OpenAPI_ServiceResponse gateway envelope (XML or JSON)
	known      bool   // some part of a data.go.kr envelope was seen
	html       bool   // the answer is an HTML page (a gateway or maintenance page)
	code       string // returnReasonCode or resultCode
	message    string
	authMsg    string
	total      int64
	hasTotal   bool
	pageNo     int64
	numOfRows  int64
	emptyItems bool
}

// success reports whether a resultCode means success: "00", "000",
// "0000", any run of zeros.
func success(code string) bool {
	return code != "" && strings.Trim(code, "0") == ""
}

// lookupCode returns the key of codeClasses for a code: a numeric code in
// its two-digit spelling, whether an agency writes it with one digit
// ("3", the portal's own code table) or pads it to three ("030", the RTMS
// services, whose success is "000").
func lookupCode(code string) string {
	if code == "" || strings.Trim(code, "0123456789") != "" {
		return code
	}
	n := strings.TrimLeft(code, "0")
	if len(n) < 2 {
		n = strings.Repeat("0", 2-len(n)) + n
	}
	return n
}

// Classify decides a data.go.kr answer. Gateway errors come as an
// OpenAPI_ServiceResponse envelope (cmmMsgHeader: errMsg, returnAuthMsg,
// returnReasonCode), in XML even when JSON was asked for or in JSON, with
// HTTP 200 or with 401/403/429: the portal's code decides, never the HTTP
// status. returnReasonCode 22 is QuotaExhausted until the next midnight
// in the provider's timezone (on a 429 too), 23 RateLimited,
// 20/29/30/31/32/33 AuthFailed (30 only once confirmed, see
// keyNotRegistered), 10/11/12 BadRequest, others Transient. A service's
// own resultCode is read from JSON (response.header.resultCode, header at
// the root, or the flat {"resultCode","resultMsg"} error without a
// response wrapper) or XML (<response><header>): zeros are success, 03
// NoData, others as the gateway codes. An answer that is an HTML page or
// holds no data.go.kr envelope at all is Transient. A totalCount of 0 or
// empty items ("", {}, {"item": []}, null, <items/>) is NoData; a
// totalCount beyond this page means more pages.
func Classify(h connector.Head) connector.Verdict {
	env, sniff := connector.ReadEnvelope(h.Bytes, readJSON, readXML)
	if sniff == "xml" && !env.hasTotal {
		// The walk stops at the first item (items are data); the counts
		// follow the items, and the head may hold them.
		env.total, env.hasTotal = lastNumber(tailXML["totalCount"], h.Bytes)
		env.pageNo, _ = lastNumber(tailXML["pageNo"], h.Bytes)
		env.numOfRows, _ = lastNumber(tailXML["numOfRows"], h.Bytes)
	}
	if env.code != "" && !success(env.code) {
		c, ok := codeClasses[lookupCode(env.code)]
		if !ok {
			c = connector.Transient
		}
		msg := env.authMsg
		if env.message != "" {
			if msg != "" {
				msg = env.message + ": " + msg
			} else {
				msg = env.message
			}
		}
		v := connector.Fail(c, env.code, msg)
		if lookupCode(env.code) == keyNotRegistered {
			v.Err.Confirm = connector.DefaultConfirm
		}
		switch c {
		case connector.QuotaExhausted:
			v.Err.ResetAt = connector.NextMidnight(h.Now, h.Location)
		case connector.RateLimited:
			v.Err.RetryAfter = RateLimitWait
			if d, ok := connector.RetryAfter(h.Header, h.Now); ok {
				v.Err.RetryAfter = d
			}
		}
		return v
	}
	if h.Status < 200 || h.Status > 299 {
		v := connector.StatusVerdict(h, RateLimitWait)
		if h.Status == http.StatusTooManyRequests {
			v.Err.RetryAfter = max(v.Err.RetryAfter, RateLimitWait)
		}
		return v
	}
	if sniff == "" {
		return connector.Fail(connector.Transient, "", "expected a JSON or XML answer, got: "+connector.Snippet(h.Bytes, 160))
	}
	if env.html || !env.known {
		// A gateway or maintenance page, or a body in none of the
		// portal's envelopes: not an answer to hand on as the dataset's
		// shape, and one that may well change when sent again.
		return connector.Fail(connector.Transient, "", "expected a data.go.kr envelope, got: "+connector.Snippet(h.Bytes, 160))
	}
	if (env.hasTotal && env.total == 0) || env.emptyItems {
		return connector.Fail(connector.NoData, env.code, "the answer holds no items")
	}
	more := env.hasTotal && env.pageNo > 0 && env.numOfRows > 0 && env.total > env.pageNo*env.numOfRows
	return connector.Verdict{More: more}
}

func readJSON(head []byte) envelope {
	var env envelope
	var gwMsg string // errMsg of a JSON gateway envelope
	connector.WalkJSON(head, func(ev connector.JSONEvent) bool {
		n := len(ev.Path)
		if n == 0 {
			return true
		}
		p := ev.Path
		// The gateway envelope: OpenAPI_ServiceResponse.cmmMsgHeader, or
		// cmmMsgHeader at the root.
		if p[0] == "OpenAPI_ServiceResponse" {
			env.gateway, env.known = true, true
			p = p[1:]
		}
		if len(p) == 2 && p[0] == "cmmMsgHeader" {
			env.gateway, env.known = true, true
			switch p[1] {
			case "returnReasonCode":
				env.code = strings.TrimSpace(ev.String())
			case "errMsg":
				gwMsg = strings.TrimSpace(ev.String())
			case "returnAuthMsg":
				env.authMsg = strings.TrimSpace(ev.String())
			}
			return true
		}
		if env.gateway {
			return true
		}
		// The flat error without a response wrapper:
		// {"responseTime":…,"resultCode":"10","resultMsg":…}.
		if n == 1 {
			switch p[0] {
			case "resultCode":
				env.code, env.known = strings.TrimSpace(ev.String()), true
			case "resultMsg":
				env.message = strings.TrimSpace(ev.String())
			case "response", "header", "body":
				env.known = true
			case "totalCount": // a service that writes its counts at the root
				env.known = true
			}
			if p[0] != "response" {
				return true
			}
		}
		// The envelope is response.header/body, or header/body at the root.
		if p[0] == "response" {
			p = p[1:]
		}
		switch {
		case len(p) == 2 && p[0] == "header" && p[1] == "resultCode":
			env.code = strings.TrimSpace(ev.String())
		case len(p) == 2 && p[0] == "header" && p[1] == "resultMsg":
			env.message = strings.TrimSpace(ev.String())
		case len(p) == 2 && p[0] == "body":
			switch p[1] {
			case "totalCount":
				env.total, env.hasTotal = number(ev.String())
			case "pageNo":
				env.pageNo, _ = number(ev.String())
			case "numOfRows":
				env.numOfRows, _ = number(ev.String())
			case "items":
				switch t := ev.Token.(type) {
				case string: // "items": "" is how some services say none
					env.emptyItems = strings.TrimSpace(t) == ""
				case nil:
					env.emptyItems = true
				case json.Delim:
					if t == '}' || t == ']' {
						env.emptyItems = ev.Empty
					}
				}
			}
		case len(p) == 3 && p[0] == "body" && p[1] == "items" && p[2] == "item" && ev.Token == json.Delim(']'):
			env.emptyItems = ev.Empty
		}
		return true
	})
	if env.gateway {
		// errMsg is "SERVICE ERROR" in XML but the code's name in JSON;
		// the message keeps both it and returnAuthMsg.
		env.message = gwMsg
	}
	return env
}

func readXML(head []byte) envelope {
	var env envelope
	connector.WalkXML(head, func(ev connector.XMLEvent) bool {
		if ev.Start {
			switch {
			case len(ev.Path) == 1 && strings.EqualFold(ev.Path[0], "html"):
				env.html = true
				return false
			case len(ev.Path) == 1 && ev.Path[0] == "OpenAPI_ServiceResponse":
				env.gateway, env.known = true, true
			case len(ev.Path) == 1 && ev.Path[0] == "response",
				len(ev.Path) == 2 && (ev.Path[1] == "header" || ev.Path[1] == "body" || ev.Path[1] == "cmmMsgHeader"):
				env.known = true
			}
			return !ev.At("items", "item") // items are data
		}
		switch {
		case ev.At("cmmMsgHeader", "returnReasonCode"), ev.At("header", "resultCode"):
			env.code = ev.Text
		case ev.At("cmmMsgHeader", "errMsg"), ev.At("header", "resultMsg"):
			env.message = ev.Text
		case ev.At("cmmMsgHeader", "returnAuthMsg"):
			env.authMsg = ev.Text
		case ev.At("body", "totalCount"):
			env.total, env.hasTotal = number(ev.Text)
		case ev.At("body", "pageNo"):
			env.pageNo, _ = number(ev.Text)
		case ev.At("body", "numOfRows"):
			env.numOfRows, _ = number(ev.Text)
		case ev.At("body", "items"):
			env.emptyItems = ev.Text == ""
		}
		return true
	})
	if !env.known && looksHTML(head) {
		env.html = true
	}
	return env
}

// looksHTML reports whether a head that is no XML envelope is an HTML
// page: a doctype or an <html> element near its start (XML parsing stops
// at a doctype's first HTML quirk).
func looksHTML(head []byte) bool {
	b := head
	if len(b) > 512 {
		b = b[:512]
	}
	s := strings.ToLower(string(b))
	return strings.Contains(s, "<!doctype html") || strings.Contains(s, "<html")
}

func number(s string) (int64, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return v, err == nil
}

// Paging counts after the items: data.go.kr writes numOfRows, pageNo and
// totalCount at the end of the body, where the head does not reach on a
// full page. Inside JSON strings and XML text a quote or '<' is escaped,
// so these patterns only match the envelope's own fields; the last match
// wins (body fields follow the items).
var (
	tailJSON = map[string]*regexp.Regexp{
		"totalCount": regexp.MustCompile(`"totalCount"\s*:\s*"?\s*(\d+)`),
		"pageNo":     regexp.MustCompile(`"pageNo"\s*:\s*"?\s*(\d+)`),
		"numOfRows":  regexp.MustCompile(`"numOfRows"\s*:\s*"?\s*(\d+)`),
	}
	tailXML = map[string]*regexp.Regexp{
		"totalCount": regexp.MustCompile(`<totalCount>\s*(\d+)\s*</totalCount>`),
		"pageNo":     regexp.MustCompile(`<pageNo>\s*(\d+)\s*</pageNo>`),
		"numOfRows":  regexp.MustCompile(`<numOfRows>\s*(\d+)\s*</numOfRows>`),
	}
)

// lastNumber returns the number of the last match of re in b.
func lastNumber(re *regexp.Regexp, b []byte) (int64, bool) {
	all := re.FindAllSubmatch(b, -1)
	if len(all) == 0 {
		return 0, false
	}
	return number(string(all[len(all)-1][1]))
}

// pageCounts says where a page stands: the total rows, the page number and
// the rows per page the provider reported, read from the head when it
// holds them, else from the tail. ok is false when neither holds
// totalCount.
func pageCounts(head, tail []byte) (total, pageNo, rows int64, ok bool) {
	env, format := connector.ReadEnvelope(head, readJSON, readXML)
	res := tailJSON
	if format == "xml" {
		res = tailXML
	}
	total, ok, pageNo, rows = env.total, env.hasTotal, env.pageNo, env.numOfRows
	if !ok {
		total, ok = lastNumber(res["totalCount"], tail)
	}
	if pageNo <= 0 {
		pageNo, _ = lastNumber(res["pageNo"], tail)
	}
	if rows <= 0 {
		rows, _ = lastNumber(res["numOfRows"], tail)
	}
	return total, pageNo, rows, ok
}
