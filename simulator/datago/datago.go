// Package datago simulates 공공데이터포털 (data.go.kr) services for the
// simulator: every path a datago dataset declares, key in serviceKey or
// ServiceKey (the decoding key, encoded once); the dataset (and its
// scope_key service) is found by path, then by the best match of its
// fixed parameters. Gateway errors come as XML in HTTP 200 even when JSON
// was asked for (30 unregistered key, 12 no such service, 23 over the
// per-second limit or minimum interval, 22 daily quota). Pages are
// pageNo/numOfRows; a page of one item carries it as an object, an empty
// result answers resultCode 03 with items "". A business day's rows appear
// the next business day at 13:00 KST.
package datago

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/synth"
)

// credential shapes the test key like a real decoding key: 88 base64
// characters ending in "==" and holding '+' and '/', so that a key encoded
// twice or not at all is rejected as the portal does.
func credential(_, env string) string {
	raw := []byte(simulator.FakeCredential(env, simulator.AlnumMixed, 64))
	b := []byte(base64.StdEncoding.EncodeToString(raw)) // 88 characters, ends in "=="
	b[10], b[40] = '+', '/'
	return string(b)
}

const (
	ctXML  = "text/xml;charset=UTF-8"
	ctJSON = "application/json;charset=UTF-8"
)

// provider is the data.go.kr wire of one simulator.
type provider struct {
	simulator.Stateless
	h      *simulator.Host
	routes map[string][]*registry.Dataset // path → datasets
	dirs   map[string]bool                // service directories of the paths

	serve, serveUnknown simulator.Handler
}

func newProvider(h *simulator.Host) (simulator.Provider, error) {
	p := &provider{h: h, dirs: map[string]bool{},
		routes: simulator.Index(h.Datasets(), func(ds *registry.Dataset) string { return ds.Request.Path })}
	for path := range p.routes {
		p.dirs[pathDir(path)] = true
	}
	p.serve, p.serveUnknown = p.operation, p.unknown
	return p, nil
}

func init() {
	simulator.Register(simulator.Registration{Connector: "datago", New: newProvider, Credential: credential})
}

// Route claims the declared paths and any other path under a declared
// service directory (answered "no such service").
func (p *provider) Route(r *http.Request) (simulator.Route, bool) {
	return p.h.Claim(r, func(path string) (simulator.Route, bool) {
		if cands := p.routes[path]; len(cands) > 0 {
			q := r.URL.Query()
			key := q.Get("serviceKey")
			if key == "" {
				key = q.Get("ServiceKey")
			}
			in := p.h.OwnerOr("service_key", key, p.h.Instance(cands[0].Provider))
			ds := simulator.BestDataset(cands, in.Provider().ID, q, nil)
			if ds == nil {
				ds = cands[0]
				in = p.h.Instance(ds.Provider)
			}
			return simulator.Route{Instance: in, Dataset: ds, Path: path, Serve: p.serve}, true
		}
		if p.dirs[pathDir(path)] {
			return simulator.Route{Instance: p.h.First(), Path: path, Serve: p.serveUnknown}, true
		}
		return simulator.Route{}, false
	})
}

func pathDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

// data.go.kr gateway reason codes and their returnAuthMsg.
var authMsg = map[string]string{
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

// gatewayError is the portal's gateway error: XML in HTTP 200, even when
// JSON was asked for.
func gatewayError(code, outcome string) *simulator.Reply {
	return gatewayErrorMsg(code, authMsg[code], outcome)
}

// gatewayErrorMsg is gatewayError with returnAuthMsg msg.
func gatewayErrorMsg(code, msg, outcome string) *simulator.Reply {
	b := make([]byte, 0, 320)
	b = append(b, "<OpenAPI_ServiceResponse>\n\t<cmmMsgHeader>\n\t\t"...)
	b = simulator.AppendXMLElem(b, "errMsg", "SERVICE ERROR")
	b = append(b, "\n\t\t"...)
	b = simulator.AppendXMLElem(b, "returnAuthMsg", msg)
	b = append(b, "\n\t\t"...)
	b = simulator.AppendXMLElem(b, "returnReasonCode", code)
	b = append(b, "\n\t</cmmMsgHeader>\n</OpenAPI_ServiceResponse>"...)
	return simulator.NewReply(http.StatusOK, ctXML, b, outcome)
}

// serviceKey returns the service key of a request: the provider's
// declared parameter, serviceKey or ServiceKey.
func serviceKey(q url.Values, param string) string {
	for _, name := range []string{param, "serviceKey", "ServiceKey"} {
		if name != "" {
			if v := q.Get(name); v != "" {
				return v
			}
		}
	}
	return ""
}

// wantsJSON reports whether any of the services' JSON switches asks
// for JSON.
func wantsJSON(q url.Values) bool {
	for _, name := range []string{"_type", "type", "resultType", "dataType", "returnType"} {
		if strings.EqualFold(q.Get(name), "json") {
			return true
		}
	}
	return false
}

// unknown answers a path under a known service directory that no dataset
// declares.
func (p *provider) unknown(r *http.Request, rt simulator.Route, _ float64) *simulator.Reply {
	if p.h.Owner("service_key", serviceKey(r.URL.Query(), rt.Instance.Provider().Auth.Param)) == nil {
		return gatewayError("30", "auth")
	}
	return gatewayError("12", "error")
}

// operation answers a data.go.kr service operation of the registry.
func (p *provider) operation(r *http.Request, rt simulator.Route, fraction float64) *simulator.Reply {
	q := r.URL.Query()
	in := p.h.Owner("service_key", serviceKey(q, rt.Instance.Provider().Auth.Param))
	if in == nil {
		return gatewayError("30", "auth")
	}
	if adm := p.h.Admit(r, in, rt.Dataset, fraction); !adm.OK {
		if adm.Reason == simulator.OverDaily {
			return gatewayError("22", "limit")
		}
		return gatewayError("23", "limit")
	}
	pageNo, numOfRows := 1, 10
	if v := q.Get("pageNo"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return gatewayError("10", "error")
		}
		pageNo = n
	}
	if v := q.Get("numOfRows"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return gatewayError("10", "error")
		}
		numOfRows = n
	}
	now := p.h.Now()
	g := &generator{seed: p.h.Seed(), ds: rt.Dataset, q: q, now: now, loc: in.Provider().Location, op: operationName(rt.Path)}
	if !g.plan() {
		return gatewayError("10", "error")
	}
	asJSON := wantsJSON(q)
	first := (pageNo - 1) * numOfRows
	n := 0
	if first < g.total {
		n = min(numOfRows, g.total-first)
	}
	code := successCode(p.h.Seed(), pathDir(rt.Path))
	if n == 0 {
		return envelope(asJSON, "03", "NODATA_ERROR", nil, numOfRows, pageNo, g.total)
	}
	rows := make([][]kv, 0, n)
	for i := first; i < first+n; i++ {
		rows = append(rows, g.item(i))
	}
	return envelope(asJSON, code, "NORMAL SERVICE.", rows, numOfRows, pageNo, g.total)
}

// successCode is the service's success resultCode: "00" for most,
// "000" or "0000" for some, fixed per service.
func successCode(seed int64, service string) string {
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

// envelope writes the response envelope. A page of one item carries it as
// an object, not an array; an empty page has items "".
func envelope(asJSON bool, code, msg string, rows [][]kv, numOfRows, pageNo, total int) *simulator.Reply {
	if asJSON {
		w := simulator.NewJSON(256 + len(rows)*400)
		w.Open('{')
		w.Key("response")
		w.Open('{')
		w.Key("header")
		w.Open('{')
		w.KStr("resultCode", code)
		w.KStr("resultMsg", msg)
		w.Close('}')
		w.Key("body")
		w.Open('{')
		w.Key("items")
		if len(rows) == 0 {
			w.Str("")
		} else {
			w.Open('{')
			w.Key("item")
			if len(rows) > 1 {
				w.Open('[')
			}
			for _, row := range rows {
				w.Open('{')
				for _, f := range row {
					w.KStr(f.k, f.v)
				}
				w.Close('}')
			}
			if len(rows) > 1 {
				w.Close(']')
			}
			w.Close('}')
		}
		w.KInt("numOfRows", int64(numOfRows))
		w.KInt("pageNo", int64(pageNo))
		w.KInt("totalCount", int64(total))
		w.Close('}')
		w.Close('}')
		w.Close('}')
		return simulator.NewReply(http.StatusOK, ctJSON, w.Bytes(), "ok")
	}
	b := make([]byte, 0, 256+len(rows)*500)
	b = append(b, `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`...)
	b = append(b, "<response><header>"...)
	b = simulator.AppendXMLElem(b, "resultCode", code)
	b = simulator.AppendXMLElem(b, "resultMsg", msg)
	b = append(b, "</header><body>"...)
	if len(rows) == 0 {
		b = append(b, "<items/>"...)
	} else {
		b = append(b, "<items>"...)
		for _, row := range rows {
			b = append(b, "<item>"...)
			for _, f := range row {
				b = simulator.AppendXMLElem(b, f.k, f.v)
			}
			b = append(b, "</item>"...)
		}
		b = append(b, "</items>"...)
	}
	b = simulator.AppendXMLElem(b, "numOfRows", strconv.Itoa(numOfRows))
	b = simulator.AppendXMLElem(b, "pageNo", strconv.Itoa(pageNo))
	b = simulator.AppendXMLElem(b, "totalCount", strconv.Itoa(total))
	b = append(b, "</body></response>"...)
	return simulator.NewReply(http.StatusOK, ctXML, b, "ok")
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

// generator plans and produces the items of one data.go.kr answer.
type generator struct {
	seed int64
	ds   *registry.Dataset
	q    url.Values
	now  time.Time
	loc  *time.Location
	op   string

	schema   *schema
	entities []string
	days     []synth.Day // newest first; nil for a snapshot service
	total    int
	kmax     int64 // tour stream: the newest modification event
}

// plan works out the dates and entities asked for; false means a
// malformed parameter.
func (g *generator) plan() bool {
	g.schema = schemaFor(g.op)
	if g.schema.stream {
		g.kmax = int64(g.now.Sub(tourEpoch) / tourEvery)
		g.total = tourTotal(g.seed)
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
	for d := to; d >= from && d >= firstDay; d-- {
		if synth.KRX.Open(d) {
			g.days = append(g.days, d)
		}
	}
	g.total = len(g.days) * len(g.entities)
	return true
}

var firstDay = synth.Date(2000, 1, 4)

// latestDay is the newest day whose data is out: a business day's rows
// appear the next business day at 13:00 KST.
func latestDay(now time.Time, loc *time.Location) synth.Day {
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
// fills with {from}/{to}/{until} ({until} and the FSC's endBasDt are
// exclusive) and the FSC names basDt, beginBasDt, endBasDt. No date at all means the latest published day.
func (g *generator) dateRange() (synth.Day, synth.Day, bool) {
	latest := latestDay(g.now, g.loc)
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
			for _, which := range []string{"from", "to", "until"} {
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
				switch {
				case which == "from" && !hasTo(g.ds, p.Name):
					which = "on" // a single day, e.g. basDt={from}
				case which == "until":
					which = "before" // the day after the range ({until}) is exclusive
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
		lo, hi, ok := parseDate(p.format, v)
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
		if p.Name != name && (strings.Contains(p.Value, "{to") || strings.Contains(p.Value, "{until")) {
			return true
		}
	}
	return false
}

// parseDate parses a date in a placeholder format and returns the
// days it covers.
func parseDate(format, v string) (synth.Day, synth.Day, bool) {
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
func (g *generator) item(i int) []kv {
	if g.schema.stream {
		return tourItem(g.seed, g.kmax-int64(i), g.loc)
	}
	day := g.days[i/len(g.entities)]
	e := i % len(g.entities)
	return g.schema.row(g, day, g.entities[e])
}

// The answer shapes of data.go.kr (simulator.Shaper), from the recorded
// corpus: the gateway's envelope as XML and as JSON, each with the HTTP
// status the portal chose (200, or 401/403 for key errors and 429 for
// quotas), and the flat JSON error some services answer in HTTP 200
// without the response wrapper.
const (
	shapeGatewayXML  = "gateway-xml"
	shapeGatewayJSON = "gateway-json"
	shapeFlatJSON    = "flat-json"
)

// Shapes lists data.go.kr's own shapes.
func (p *provider) Shapes() []simulator.ShapeSpec {
	codes := make([]string, 0, len(authMsg)+1)
	for c := range authMsg {
		codes = append(codes, c)
	}
	codes = append(codes, "03")
	slices.Sort(codes)
	quota := func(code string) bool { return code == "" || code == "22" }
	flatQuota := func(code string) bool { return code == "22" }
	return []simulator.ShapeSpec{
		{Name: shapeGatewayXML, Doc: "the gateway envelope <OpenAPI_ServiceResponse><cmmMsgHeader>… as XML (code 22 and HTTP 200 by default)",
			Codes: codes, TakesMessage: true, SpendsQuota: quota},
		{Name: shapeGatewayJSON, Doc: `the gateway envelope as JSON, {"OpenAPI_ServiceResponse":{"cmmMsgHeader":{…}}} (code 22 and HTTP 200 by default)`,
			Codes: codes, TakesMessage: true, SpendsQuota: quota},
		{Name: shapeFlatJSON, Doc: `the flat JSON error {"resultCode":"10","resultMsg":"INVALID_REQUEST_PARAMETER_ERROR"} without the response wrapper (code 10 and HTTP 200 by default)`,
			Codes: codes, TakesMessage: true, SpendsQuota: flatQuota},
	}
}

// ShapeApplies: every shape answers every data.go.kr request.
func (p *provider) ShapeApplies(string, *http.Request, simulator.Route) bool { return true }

// ShapeReply answers a request with a shape.
func (p *provider) ShapeReply(shape string, _ *http.Request, _ simulator.Route, c simulator.ShapeCall) *simulator.Reply {
	f := c.Fault
	code := f.Code
	if code == "" {
		code = "22"
		if shape == shapeFlatJSON {
			code = "10"
		}
	}
	msg := f.Message
	if msg == "" {
		msg = authMsg[code]
		if code == "03" {
			msg = "NODATA_ERROR"
		}
	}
	status := simulator.OrStatus(f.Status, http.StatusOK)
	switch shape {
	case shapeGatewayXML:
		rep := gatewayErrorMsg(code, msg, "fault-shape")
		rep.Status = status
		return rep
	case shapeGatewayJSON:
		w := simulator.NewJSON(200)
		w.Open('{')
		w.Key("OpenAPI_ServiceResponse")
		w.Open('{')
		w.Key("cmmMsgHeader")
		w.Open('{')
		w.KStr("errMsg", "SERVICE ERROR")
		w.KStr("returnAuthMsg", msg)
		w.KStr("returnReasonCode", code)
		w.Close('}')
		w.Close('}')
		w.Close('}')
		return simulator.NewReply(status, ctJSON, w.Bytes(), "fault-shape")
	case shapeFlatJSON:
		w := simulator.NewJSON(100)
		w.Open('{')
		w.KStr("resultCode", code)
		w.KStr("resultMsg", msg)
		w.Close('}')
		return simulator.NewReply(status, ctJSON, w.Bytes(), "fault-shape")
	}
	return nil
}
