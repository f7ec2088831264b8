package simulator

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator/synth"
)

// data.go.kr gateway reason codes and their returnAuthMsg.
var datagoAuthMsg = map[string]string{
	"01": "APPLICATION_ERROR",
	"04": "HTTP_ERROR",
	"05": "SERVICETIME_OUT",
	"10": "INVALID_REQUEST_PARAMETER_ERROR",
	"11": "NO_MANDATORY_REQUEST_PARAMETERS_ERROR",
	"12": "NO_OPENAPI_SERVICE_ERROR",
	"20": "SERVICE_ACCESS_DENIED_ERROR",
	"22": "LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR",
	"23": "LIMITED_NUMBER_OF_SERVICE_REQUESTS_PER_SECOND_EXCEEDS_ERROR",
	"29": "BLACKLISTED_IP_ERROR",
	"30": "SERVICE_KEY_IS_NOT_REGISTERED_ERROR",
	"31": "DEADLINE_HAS_EXPIRED_ERROR",
	"32": "UNREGISTERED_IP_ERROR",
	"99": "UNKNOWN_ERROR",
}

// datagoGatewayError is the portal's gateway error: XML in HTTP 200, even
// when JSON was asked for.
func datagoGatewayError(code, outcome string) *reply {
	b := make([]byte, 0, 320)
	b = append(b, "<OpenAPI_ServiceResponse>\n\t<cmmMsgHeader>\n\t\t"...)
	b = xelem(b, "errMsg", "SERVICE ERROR")
	b = append(b, "\n\t\t"...)
	b = xelem(b, "returnAuthMsg", datagoAuthMsg[code])
	b = append(b, "\n\t\t"...)
	b = xelem(b, "returnReasonCode", code)
	b = append(b, "\n\t</cmmMsgHeader>\n</OpenAPI_ServiceResponse>"...)
	return newReply(http.StatusOK, ctXML, b, outcome)
}

// datagoKey returns the service key of a request: the provider's declared
// parameter, serviceKey or ServiceKey.
func datagoKey(q url.Values, param string) string {
	for _, name := range []string{param, "serviceKey", "ServiceKey"} {
		if name != "" {
			if v := q.Get(name); v != "" {
				return v
			}
		}
	}
	return ""
}

// datagoWantsJSON reports whether any of the services' JSON switches asks
// for JSON.
func datagoWantsJSON(q url.Values) bool {
	for _, name := range []string{"_type", "type", "resultType", "dataType", "returnType"} {
		if strings.EqualFold(q.Get(name), "json") {
			return true
		}
	}
	return false
}

// serveDatagoUnknown answers a path under a known service directory that
// no dataset declares.
func (s *Simulator) serveDatagoUnknown(r *http.Request, rt route, _ float64) *reply {
	if s.credentialOwner("datago", "service_key", datagoKey(r.URL.Query(), rt.prov.p.Auth.Param)) == nil {
		return datagoGatewayError("30", "auth")
	}
	return datagoGatewayError("12", "error")
}

// serveDatago answers a data.go.kr service operation of the registry.
func (s *Simulator) serveDatago(r *http.Request, rt route, fraction float64) *reply {
	q := r.URL.Query()
	ps := s.credentialOwner("datago", "service_key", datagoKey(q, rt.prov.p.Auth.Param))
	if ps == nil {
		return datagoGatewayError("30", "auth")
	}
	if adm := s.admit(ps, s.datasetScopes(ps, rt.ds), fraction); !adm.ok {
		if adm.reason == overDaily {
			return datagoGatewayError("22", "limit")
		}
		return datagoGatewayError("23", "limit")
	}
	pageNo, numOfRows := 1, 10
	if v := q.Get("pageNo"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return datagoGatewayError("10", "error")
		}
		pageNo = n
	}
	if v := q.Get("numOfRows"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return datagoGatewayError("10", "error")
		}
		numOfRows = n
	}
	now := s.now()
	g := &datagoGen{s: s, ds: rt.ds, q: q, now: now, loc: ps.p.Location, op: operationName(rt.path)}
	if !g.plan() {
		return datagoGatewayError("10", "error")
	}
	asJSON := datagoWantsJSON(q)
	first := (pageNo - 1) * numOfRows
	n := 0
	if first < g.total {
		n = min(numOfRows, g.total-first)
	}
	code := datagoSuccessCode(s.seed, pathDir(rt.path))
	if n == 0 {
		return datagoEnvelope(asJSON, "03", "NODATA_ERROR", nil, numOfRows, pageNo, g.total)
	}
	rows := make([][]kv, 0, n)
	for i := first; i < first+n; i++ {
		rows = append(rows, g.item(i))
	}
	return datagoEnvelope(asJSON, code, "NORMAL SERVICE.", rows, numOfRows, pageNo, g.total)
}

// datagoSuccessCode is the service's success resultCode: "00" for most,
// "000" or "0000" for some, fixed per service.
func datagoSuccessCode(seed int64, service string) string {
	switch synth.Hash(seed, "datago-code|"+service, 0) % 10 {
	case 7, 8:
		return "000"
	case 9:
		return "0000"
	}
	return "00"
}

// kv is one field of an item.
type kv struct{ k, v string }

// datagoEnvelope writes the response envelope. A page of one item carries
// it as an object, not an array; an empty page has items "".
func datagoEnvelope(asJSON bool, code, msg string, rows [][]kv, numOfRows, pageNo, total int) *reply {
	if asJSON {
		w := jw{b: make([]byte, 0, 256+len(rows)*400)}
		w.open('{')
		w.key("response")
		w.open('{')
		w.key("header")
		w.open('{')
		w.kstr("resultCode", code)
		w.kstr("resultMsg", msg)
		w.close('}')
		w.key("body")
		w.open('{')
		w.key("items")
		if len(rows) == 0 {
			w.str("")
		} else {
			w.open('{')
			w.key("item")
			if len(rows) > 1 {
				w.open('[')
			}
			for _, row := range rows {
				w.open('{')
				for _, f := range row {
					w.kstr(f.k, f.v)
				}
				w.close('}')
			}
			if len(rows) > 1 {
				w.close(']')
			}
			w.close('}')
		}
		w.kint("numOfRows", int64(numOfRows))
		w.kint("pageNo", int64(pageNo))
		w.kint("totalCount", int64(total))
		w.close('}')
		w.close('}')
		w.close('}')
		return newReply(http.StatusOK, "application/json;charset=UTF-8", w.b, "ok")
	}
	b := make([]byte, 0, 256+len(rows)*500)
	b = append(b, `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`...)
	b = append(b, "<response><header>"...)
	b = xelem(b, "resultCode", code)
	b = xelem(b, "resultMsg", msg)
	b = append(b, "</header><body>"...)
	if len(rows) == 0 {
		b = append(b, "<items/>"...)
	} else {
		b = append(b, "<items>"...)
		for _, row := range rows {
			b = append(b, "<item>"...)
			for _, f := range row {
				b = xelem(b, f.k, f.v)
			}
			b = append(b, "</item>"...)
		}
		b = append(b, "</items>"...)
	}
	b = xelem(b, "numOfRows", strconv.Itoa(numOfRows))
	b = xelem(b, "pageNo", strconv.Itoa(pageNo))
	b = xelem(b, "totalCount", strconv.Itoa(total))
	b = append(b, "</body></response>"...)
	return newReply(http.StatusOK, ctXML, b, "ok")
}

// operationName returns the operation of a service path without its
// version suffix: …/getStockMarketIndex_V2 → getStockMarketIndex.
func operationName(p string) string {
	op := p[strings.LastIndexByte(p, '/')+1:]
	if i := strings.Index(op, "_V"); i > 0 {
		op = op[:i]
	}
	return strings.TrimRight(op, "0123456789")
}

// datagoGen plans and produces the items of one data.go.kr answer.
type datagoGen struct {
	s   *Simulator
	ds  *registry.Dataset
	q   url.Values
	now time.Time
	loc *time.Location
	op  string

	schema   *datagoSchema
	entities []string
	days     []synth.Day // newest first; nil for a snapshot service
	total    int
	kmax     int64 // tour stream: the newest modification event
}

// plan works out the dates and entities asked for; false means a
// malformed parameter.
func (g *datagoGen) plan() bool {
	g.schema = datagoSchemaFor(g.op)
	if g.schema.stream {
		g.kmax = int64(g.now.Sub(tourEpoch) / tourEvery)
		g.total = tourTotal(g.s.seed)
		return true
	}
	g.entities = g.schema.entities
	if name := g.q.Get(g.schema.filter); g.schema.filter != "" && name != "" {
		var keep []string
		for _, e := range g.entities {
			if e == name {
				keep = append(keep, e)
			}
		}
		g.entities = keep
	}
	from, to, ok := g.dateRange()
	if !ok {
		return false
	}
	for d := to; d >= from && d >= datagoFirstDay; d-- {
		if synth.KRX.Open(d) {
			g.days = append(g.days, d)
		}
	}
	g.total = len(g.days) * len(g.entities)
	return true
}

var datagoFirstDay = synth.Date(2000, 1, 4)

// datagoLatest is the newest day whose data is out: a business day's rows
// appear the next business day at 13:00 KST.
func datagoLatest(now time.Time, loc *time.Location) synth.Day {
	t := now.In(loc)
	today := synth.DayOf(t)
	d := synth.KRX.Prev(today)
	for i := 0; i < 40; i++ {
		pub := synth.KRX.Next(d)
		if pub < today || (pub == today && t.Hour() >= 13) {
			break
		}
		d = synth.KRX.Prev(d)
	}
	return d
}

// dateRange reads the dates asked for from the parameters the dataset
// fills with {from}/{to} and the FSC names basDt, beginBasDt, endBasDt
// (endBasDt exclusive). No date at all means the latest published day.
func (g *datagoGen) dateRange() (synth.Day, synth.Day, bool) {
	latest := datagoLatest(g.now, g.loc)
	from, to := synth.Day(-1<<30), latest
	set := false
	type dparam struct {
		name, which, format string
	}
	// The FSC names first: their meaning is the service's, whatever the
	// dataset fills them with (endBasDt is exclusive).
	params := []dparam{{"basDt", "on", "YYYYMMDD"}, {"beginBasDt", "from", "YYYYMMDD"}, {"endBasDt", "before", "YYYYMMDD"}}
	if g.ds != nil {
		for _, p := range g.ds.Request.Params {
			for _, which := range []string{"from", "to"} {
				i := strings.Index(p.Value, "{"+which)
				if i < 0 {
					continue
				}
				format := "YYYYMMDD"
				if j := strings.IndexByte(p.Value[i:], '}'); j > 0 {
					if _, f, ok := strings.Cut(p.Value[i+1:i+j], ":"); ok {
						format = f
					}
				}
				if which == "from" && !hasTo(g.ds, p.Name) {
					which = "on" // a single day, e.g. basDt={from}
				}
				params = append(params, dparam{p.Name, which, format})
			}
		}
	}
	seen := map[string]bool{}
	for _, p := range params {
		v := g.q.Get(p.name)
		if v == "" || seen[p.name] {
			continue
		}
		seen[p.name] = true
		lo, hi, ok := parseDatagoDate(p.format, v)
		if !ok {
			return 0, 0, false
		}
		switch p.which {
		case "from":
			from = max(from, lo)
		case "to":
			to = min(to, hi)
		case "before":
			to = min(to, lo-1)
		default: // a single day ({from} alone, basDt)
			from, to = max(from, lo), min(to, hi)
		}
		set = true
	}
	if !set {
		from = latest
	}
	return from, to, true
}

// hasTo reports whether the dataset has a {to} parameter besides name.
func hasTo(ds *registry.Dataset, name string) bool {
	if ds == nil {
		return false
	}
	for _, p := range ds.Request.Params {
		if p.Name != name && strings.Contains(p.Value, "{to") {
			return true
		}
	}
	return false
}

// parseDatagoDate parses a date in a placeholder format and returns the
// days it covers.
func parseDatagoDate(format, v string) (synth.Day, synth.Day, bool) {
	switch format {
	case "YYYY-MM-DD":
		d, ok := synth.ParseISO(v)
		return d, d, ok
	case "YYYYMM":
		if len(v) != 6 {
			return 0, 0, false
		}
		d, ok := synth.ParseYYYYMMDD(v + "01")
		if !ok {
			return 0, 0, false
		}
		y, m, _ := d.Civil()
		return d, d + synth.Day(synth.DaysIn(y, m)) - 1, true
	case "YYYY":
		if len(v) != 4 {
			return 0, 0, false
		}
		d, ok := synth.ParseYYYYMMDD(v + "0101")
		if !ok {
			return 0, 0, false
		}
		y, _, _ := d.Civil()
		return d, synth.Date(y, 12, 31), true
	}
	d, ok := synth.ParseYYYYMMDD(v)
	return d, d, ok
}

// item returns the i-th item of the answer (newest day first, then entity).
func (g *datagoGen) item(i int) []kv {
	if g.schema.stream {
		return tourItem(g.s.seed, g.kmax-int64(i), g.loc)
	}
	day := g.days[i/len(g.entities)]
	e := i % len(g.entities)
	return g.schema.row(g, day, g.entities[e])
}
