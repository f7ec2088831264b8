package ecos

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/connector"
)

// Service is the ECOS service the connector asks, and the root of its
// answers.
const Service = "StatisticSearch"

// ThrottleWait is how long to wait after ERROR-602; ECOS names no time
// ("잠시후 이용해주시기 바랍니다").
const ThrottleWait = 10 * time.Second

// codeClasses classifies the RESULT codes ECOS documents (its developer
// guide, https://ecos.bok.or.kr/api/#/DevGuide/DevSpeciflcation; the
// recorded answers are testdata/recorded/cases.yaml). Unknown codes are
// Transient.
var codeClasses = map[string]connector.Class{
	"INFO-100":  connector.AuthFailed,  // bad key
	"INFO-200":  connector.NoData,      // no data
	"ERROR-100": connector.BadRequest,  // a required value is missing
	"ERROR-101": connector.BadRequest,  // the date does not fit the cycle
	"ERROR-200": connector.BadRequest,  // the file type (xml/json) is missing or not valid
	"ERROR-300": connector.BadRequest,  // row count missing
	"ERROR-301": connector.BadRequest,  // row count not valid (also: the demo key asked more than 10 rows)
	"ERROR-400": connector.BadRequest,  // range too large (60 s timeout): ask for fewer rows or dates
	"ERROR-500": connector.Transient,   // server error ("or the service was not found": StatisticSearch exists)
	"ERROR-600": connector.Transient,   // DB connection
	"ERROR-601": connector.Transient,   // SQL error, on the server's side per the guide
	"ERROR-602": connector.RateLimited, // too many calls

	// Not in the ECOS guide, but named by issue 22 as ECOS parameter
	// errors: the request-index codes of the Korean open-data platforms
	// ECOS shares its RESULT envelope with (service not found, bad start
	// row, bad end row, row not an integer). A wrong request either way,
	// never worth sending again.
	"ERROR-310": connector.BadRequest,
	"ERROR-331": connector.BadRequest,
	"ERROR-332": connector.BadRequest,
	"ERROR-333": connector.BadRequest,
}

// envelope is what the head of an ECOS answer says.
type envelope struct {
	code, message string
	root          string // the first member (JSON) or root element (XML)
	total         int64
	hasTotal      bool
	emptyRows     bool
}

// Classify decides the outcome of a StatisticSearch answer whose last
// requested row is end. ECOS reports errors with HTTP 200 as
// {"RESULT":{"CODE":…,"MESSAGE":…}} (or <RESULT> in XML): INFO-200 is
// NoData, ERROR-602 RateLimited, INFO-100 AuthFailed, parameter errors
// BadRequest, server errors Transient. A list_total_count of 0 or an empty
// row array is NoData; a list_total_count beyond end means more pages. Any
// other answer (an HTML maintenance page) is Transient.
func Classify(h connector.Head, end int) connector.Verdict {
	env, format := connector.ReadEnvelope(h.Bytes, readJSON, readXML)
	if format == "" && h.Status >= 200 && h.Status <= 299 {
		return connector.Fail(connector.Transient, "", "expected a JSON or XML answer, got: "+connector.Snippet(h.Bytes, 160))
	}
	if env.code != "" {
		c, ok := codeClasses[env.code]
		switch {
		case ok:
		case strings.HasPrefix(env.code, "INFO-000"):
			c = 0 // a success code inside RESULT: not an error
		default:
			c = connector.Transient
		}
		if c != 0 {
			v := connector.Fail(c, env.code, env.message)
			if c == connector.RateLimited {
				v.Err.RetryAfter = ThrottleWait
				if d, ok := connector.RetryAfter(h.Header, h.Now); ok {
					v.Err.RetryAfter = d
				}
			}
			return v
		}
	}
	if h.Status < 200 || h.Status > 299 {
		return connector.StatusVerdict(h, ThrottleWait)
	}
	if env.root != Service {
		return connector.Fail(connector.Transient, "", "expected a "+Service+" or RESULT answer, got: "+connector.Snippet(h.Bytes, 160))
	}
	if (env.hasTotal && env.total == 0) || env.emptyRows {
		return connector.Fail(connector.NoData, "", "the answer holds no rows")
	}
	return connector.Verdict{More: env.hasTotal && env.total > int64(end)}
}

func readJSON(head []byte) envelope {
	var env envelope
	connector.WalkJSON(head, func(ev connector.JSONEvent) bool {
		n := len(ev.Path)
		switch {
		case n >= 2 && ev.Path[n-2] == "RESULT" && ev.Path[n-1] == "CODE":
			env.code = strings.TrimSpace(ev.String())
		case n >= 2 && ev.Path[n-2] == "RESULT" && ev.Path[n-1] == "MESSAGE":
			env.message = strings.TrimSpace(ev.String())
		case n == 1 && env.root == "":
			env.root = ev.Path[0]
		case n == 2 && ev.Path[1] == "list_total_count":
			if v, err := strconv.ParseInt(ev.String(), 10, 64); err == nil {
				env.total, env.hasTotal = v, true
			}
		case n == 2 && ev.Path[1] == "row" && ev.Token == json.Delim(']'):
			env.emptyRows = ev.Empty
			return false // rows are data; nothing after them matters
		case n >= 3 && ev.Path[1] == "row":
			return false // a row: not empty, and list_total_count came first
		}
		return true
	})
	return env
}

func readXML(head []byte) envelope {
	var env envelope
	connector.WalkXML(head, func(ev connector.XMLEvent) bool {
		switch {
		case ev.Start:
			if len(ev.Path) == 1 {
				env.root = ev.Path[0]
			}
			if ev.At("row") {
				return false
			}
		case ev.At("RESULT", "CODE"):
			env.code = ev.Text
		case ev.At("RESULT", "MESSAGE"):
			env.message = ev.Text
		case len(ev.Path) == 2 && ev.Path[1] == "list_total_count":
			if v, err := strconv.ParseInt(ev.Text, 10, 64); err == nil {
				env.total, env.hasTotal = v, true
			}
		}
		return true
	})
	return env
}
