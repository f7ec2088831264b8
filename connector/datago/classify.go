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

// codeClasses classifies the portal's reason codes, which come in the XML
// gateway envelope (returnReasonCode) and in services' own resultCode
// alike. Unknown codes are Transient.
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
	"22": connector.QuotaExhausted, // daily quota exceeded
	"23": connector.RateLimited,    // per-second limit exceeded
	"29": connector.AuthFailed,     // blacklisted IP: a person must act
	"30": connector.AuthFailed,     // key not registered
	"31": connector.AuthFailed,     // key expired
	"32": connector.AuthFailed,     // unregistered IP
	"99": connector.Transient,      // unknown error
}

// envelope is what the head of a data.go.kr answer says.
type envelope struct {
	gateway    bool   // the XML OpenAPI_ServiceResponse gateway envelope
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

// Classify decides a data.go.kr answer. Gateway errors come as an XML
// OpenAPI_ServiceResponse with HTTP 200 (or 403) even when JSON was asked
// for: returnReasonCode 22 is QuotaExhausted until the next midnight in
// the provider's timezone, 23 RateLimited, 20/29/30/31/32 AuthFailed, 10/11/12
// BadRequest, others Transient. A service's own resultCode is read from
// JSON (response.header.resultCode) or XML (<response><header>): zeros are
// success, 03 NoData, others as the gateway codes. A totalCount of 0 or
// empty items is NoData; a totalCount beyond this page means more pages.
func Classify(h connector.Head) connector.Verdict {
	var env envelope
	sniff := connector.Sniff(h.Bytes)
	switch sniff {
	case "json":
		env = readJSON(h.Bytes)
	case "xml":
		env = readXML(h.Bytes)
	}
	if env.code != "" && !success(env.code) {
		c, ok := codeClasses[env.code]
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
	if (env.hasTotal && env.total == 0) || env.emptyItems {
		return connector.Fail(connector.NoData, env.code, "the answer holds no items")
	}
	more := env.hasTotal && env.pageNo > 0 && env.numOfRows > 0 && env.total > env.pageNo*env.numOfRows
	return connector.Verdict{More: more}
}

func readJSON(head []byte) envelope {
	var env envelope
	connector.WalkJSON(head, func(ev connector.JSONEvent) bool {
		n := len(ev.Path)
		if n == 0 {
			return true
		}
		// The envelope is response.header/body, or header/body at the root.
		p := ev.Path
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
	return env
}

func readXML(head []byte) envelope {
	var env envelope
	connector.WalkXML(head, func(ev connector.XMLEvent) bool {
		if ev.Start {
			if len(ev.Path) == 1 && ev.Path[0] == "OpenAPI_ServiceResponse" {
				env.gateway = true
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
	return env
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
	var env envelope
	res := tailJSON
	switch connector.Sniff(head) {
	case "json":
		env = readJSON(head)
	case "xml":
		env = readXML(head)
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
