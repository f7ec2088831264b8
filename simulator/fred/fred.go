// Package fred simulates FRED (Federal Reserve Bank of St. Louis) for the
// simulator: GET /fred/series/observations, the registry provider found by
// api_key (32 lower-case letters and digits). Errors use the HTTP status
// with an error_code/error_message body (XML unless file_type=json); over
// the limit 429 "Too Many Requests.  Exceeded Rate Limit". Observations
// page with limit/offset; daily values appear the next day from 16:00
// Chicago (weekdays; U.S. holidays carry "."), monthly and quarterly ones
// some weeks after the period, dated on its first day.
package fred

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/synth"
)

const observationsPath = "/fred/series/observations"

// provider is the FRED wire of one simulator.
type provider struct {
	simulator.Stateless
	h      *simulator.Host
	series map[string][]*registry.Dataset // series id → datasets
	serve  simulator.Handler
}

func newProvider(h *simulator.Host) (simulator.Provider, error) {
	p := &provider{h: h, series: simulator.Index(h.Datasets(), func(ds *registry.Dataset) string { return ds.Request.SeriesID })}
	p.serve = p.observations
	return p, nil
}

func init() {
	// The test key is shaped like a real one: 32 lower-case letters and
	// digits (anything else is refused).
	simulator.Register(simulator.Registration{Connector: "fred", New: newProvider, Credential: simulator.Shaped(simulator.AlnumLower, 32)})
}

// Route claims /fred/series/observations.
func (p *provider) Route(r *http.Request) (simulator.Route, bool) {
	return p.h.Claim(r, func(path string) (simulator.Route, bool) {
		if path != observationsPath {
			return simulator.Route{}, false
		}
		q := r.URL.Query()
		in := p.h.OwnerOr("api_key", q.Get("api_key"), p.h.First())
		ds := simulator.BestDataset(p.series[q.Get("series_id")], in.Provider().ID, nil, nil)
		return simulator.Route{Instance: in, Dataset: ds, Path: path, Serve: p.serve}, true
	})
}

const keyHelp = "  Read https://fred.stlouisfed.org/docs/api/api_key.html for more information."

// seriesInfo describes known series; any other registry series is a
// daily one from 1990 on.
type seriesInfo struct {
	freq  string // d, m, q
	start synth.Day
	base  float64
	vol   float64
	dec   int
	units string
}

var known = map[string]seriesInfo{
	"DGS1":     {"d", synth.Date(1962, 1, 2), 4.5, 0.012, 2, "lin"},
	"DGS2":     {"d", synth.Date(1976, 6, 1), 4.3, 0.012, 2, "lin"},
	"DGS5":     {"d", synth.Date(1962, 1, 2), 4.1, 0.012, 2, "lin"},
	"DGS10":    {"d", synth.Date(1962, 1, 2), 4.2, 0.01, 2, "lin"},
	"DGS30":    {"d", synth.Date(1977, 2, 15), 4.4, 0.009, 2, "lin"},
	"DFF":      {"d", synth.Date(1954, 7, 1), 4.8, 0.004, 2, "lin"},
	"T10Y2Y":   {"d", synth.Date(1976, 6, 1), 0.4, 0.05, 2, "lin"},
	"DEXKOUS":  {"d", synth.Date(1981, 4, 13), 1330, 0.005, 2, "lin"},
	"CPIAUCSL": {"m", synth.Date(1947, 1, 1), 310, 0.002, 3, "lin"},
	"UNRATE":   {"m", synth.Date(1948, 1, 1), 4.0, 0.02, 1, "lin"},
	"FEDFUNDS": {"m", synth.Date(1954, 7, 1), 4.8, 0.01, 2, "lin"},
	"GDP":      {"q", synth.Date(1947, 1, 1), 28000, 0.006, 3, "lin"},
}

// fail answers with FRED's error body in the asked format.
func fail(xml bool, status int, msg, outcome string) *simulator.Reply {
	if xml {
		b := []byte(`<?xml version="1.0" encoding="utf-8" ?>` + "\n" + `<error code="` + strconv.Itoa(status) + `" message="`)
		b = simulator.AppendXMLText(b, msg)
		b = append(b, "\"/>\n"...)
		return simulator.NewReply(status, "text/xml; charset=UTF-8", b, outcome)
	}
	return simulator.JSONReply(status, "application/json; charset=UTF-8", outcome, func(w *simulator.JSON) {
		w.KInt("error_code", int64(status))
		w.KStr("error_message", msg)
	})
}

func isKey(k string) bool {
	if len(k) != 32 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// observations answers GET /fred/series/observations.
func (p *provider) observations(r *http.Request, rt simulator.Route, fraction float64) *simulator.Reply {
	q := r.URL.Query()
	fileType := q.Get("file_type")
	xml := fileType != "json"
	if fileType != "" && fileType != "json" && fileType != "xml" {
		return fail(false, http.StatusBadRequest, "Bad Request.  Variable file_type is not one of the following values: 'xml', 'json'.", "error")
	}
	in, rep := p.authorize(r, q.Get("api_key"), xml, rt, fraction)
	if rep != nil {
		return rep
	}
	seriesID := q.Get("series_id")
	if seriesID == "" {
		return fail(xml, http.StatusBadRequest, "Bad Request.  Variable series_id is not set.", "error")
	}
	if rt.Dataset == nil {
		return fail(xml, http.StatusBadRequest, "Bad Request.  The series does not exist.", "error")
	}
	w, rep := parseWindow(q, xml)
	if rep != nil {
		return rep
	}

	seed := p.h.Seed()
	info, isKnown := known[seriesID]
	if !isKnown {
		info = seriesInfo{"d", synth.Date(1990, 1, 2), synth.Pick(seed, "fred|"+seriesID, 1, 200), 0.01, 2, "lin"}
	}
	now := p.h.Now()
	loc := in.Provider().Location
	dates := observationDates(info, w.start, w.end, now, loc)
	if w.sortOrder == "desc" {
		for i, j := 0, len(dates)-1; i < j; i, j = i+1, j-1 {
			dates[i], dates[j] = dates[j], dates[i]
		}
	}
	o := &obsPage{
		window: w,
		info:   info,
		series: synth.NewSeries(seed, "fred|"+seriesID, info.base, info.vol),
		rtDay:  synth.DayOf(now.In(loc)).ISO(),
		count:  len(dates),
		page:   dates[min(w.offset, len(dates)):min(w.offset+w.limit, len(dates))],
	}
	if xml {
		return o.xml()
	}
	return o.json()
}

// authorize finds the instance owning key and admits the call against its
// rate limit, or answers FRED's error for a missing, malformed or unknown
// key or an exceeded limit.
func (p *provider) authorize(r *http.Request, key string, xml bool, rt simulator.Route, fraction float64) (*simulator.Instance, *simulator.Reply) {
	switch {
	case key == "":
		return nil, fail(xml, http.StatusBadRequest, "Bad Request.  Variable api_key is not set."+keyHelp, "auth")
	case !isKey(key):
		return nil, fail(xml, http.StatusBadRequest, "Bad Request.  The value for variable api_key is not a 32 character alpha-numeric lower-case string."+keyHelp, "auth")
	}
	in := p.h.Owner("api_key", key)
	if in == nil {
		return nil, fail(xml, http.StatusBadRequest, "Bad Request.  The value for variable api_key is not registered."+keyHelp, "auth")
	}
	if adm := p.h.Admit(r, in, rt.Dataset, fraction); !adm.OK {
		return nil, fail(xml, http.StatusTooManyRequests, "Too Many Requests.  Exceeded Rate Limit", "limit")
	}
	return in, nil
}

// window is the observation range and paging a request asks for.
type window struct {
	start, end    synth.Day
	limit, offset int
	sortOrder     string // asc or desc
}

// parseWindow reads observation_start, observation_end, limit, offset and
// sort_order with FRED's defaults, or answers FRED's error for the first
// bad one.
func parseWindow(q url.Values, xml bool) (window, *simulator.Reply) {
	w := window{start: synth.Date(1776, 7, 4), end: synth.Date(9999, 12, 31), limit: 100000}
	var ok bool
	if v := q.Get("observation_start"); v != "" {
		if w.start, ok = synth.ParseISO(v); !ok {
			return w, fail(xml, http.StatusBadRequest, "Bad Request.  Variable observation_start is not a valid date in the format YYYY-MM-DD.", "error")
		}
	}
	if v := q.Get("observation_end"); v != "" {
		if w.end, ok = synth.ParseISO(v); !ok {
			return w, fail(xml, http.StatusBadRequest, "Bad Request.  Variable observation_end is not a valid date in the format YYYY-MM-DD.", "error")
		}
	}
	if w.start > w.end {
		return w, fail(xml, http.StatusBadRequest, "Bad Request.  The value for variable observation_start is after observation_end.", "error")
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100000 {
			return w, fail(xml, http.StatusBadRequest, "Bad Request.  Variable limit is not between 1 and 100000.", "error")
		}
		w.limit = n
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return w, fail(xml, http.StatusBadRequest, "Bad Request.  Variable offset is not a non-negative integer.", "error")
		}
		w.offset = n
	}
	w.sortOrder = q.Get("sort_order")
	switch w.sortOrder {
	case "":
		w.sortOrder = "asc"
	case "asc", "desc":
	default:
		return w, fail(xml, http.StatusBadRequest, "Bad Request.  Variable sort_order is not one of the following values: 'asc', 'desc'.", "error")
	}
	return w, nil
}

// obsPage is one answer's page of observations.
type obsPage struct {
	window
	info   seriesInfo
	series synth.Series
	rtDay  string // realtime_start and realtime_end: today
	count  int    // observations in the whole window
	page   []synth.Day
}

// value is the observation on d: "." on a U.S. holiday for daily series.
func (o *obsPage) value(d synth.Day) string {
	if o.info.freq == "d" && synth.USHoliday(d) {
		return "."
	}
	return simulator.FormatFixed(o.series.Value(d), o.info.dec)
}

func (o *obsPage) xml() *simulator.Reply {
	rtDay := o.rtDay
	b := make([]byte, 0, 512+120*len(o.page))
	b = append(b, `<?xml version="1.0" encoding="utf-8" ?>`+"\n"...)
	b = append(b, `<observations realtime_start="`+rtDay+`" realtime_end="`+rtDay+`" observation_start="`+o.start.ISO()+
		`" observation_end="`+o.end.ISO()+`" units="lin" output_type="1" file_type="xml" order_by="observation_date" sort_order="`+
		o.sortOrder+`" count="`+strconv.Itoa(o.count)+`" offset="`+strconv.Itoa(o.offset)+`" limit="`+strconv.Itoa(o.limit)+`">`+"\n"...)
	for _, d := range o.page {
		b = append(b, `  <observation realtime_start="`+rtDay+`" realtime_end="`+rtDay+`" date="`...)
		b = d.AppendISO(b)
		b = append(b, `" value="`+o.value(d)+`"/>`+"\n"...)
	}
	b = append(b, "</observations>\n"...)
	return simulator.NewReply(http.StatusOK, "text/xml; charset=UTF-8", b, "ok")
}

func (o *obsPage) json() *simulator.Reply {
	w := simulator.NewJSON(512 + 100*len(o.page))
	w.Open('{')
	w.KStr("realtime_start", o.rtDay)
	w.KStr("realtime_end", o.rtDay)
	w.KStr("observation_start", o.start.ISO())
	w.KStr("observation_end", o.end.ISO())
	w.KStr("units", o.info.units)
	w.KInt("output_type", 1)
	w.KStr("file_type", "json")
	w.KStr("order_by", "observation_date")
	w.KStr("sort_order", o.sortOrder)
	w.KInt("count", int64(o.count))
	w.KInt("offset", int64(o.offset))
	w.KInt("limit", int64(o.limit))
	w.Key("observations")
	w.Open('[')
	for _, d := range o.page {
		w.Open('{')
		w.KStr("realtime_start", o.rtDay)
		w.KStr("realtime_end", o.rtDay)
		w.KStr("date", d.ISO())
		w.KStr("value", o.value(d))
		w.Close('}')
	}
	w.Close(']')
	w.Close('}')
	return simulator.NewReply(http.StatusOK, "application/json; charset=UTF-8", w.Bytes(), "ok")
}

// observationDates lists a series' observation dates in [from, to] that are
// published at now: daily values (weekdays; holidays carry ".") the next
// U.S. business day from 16:00, monthly ones 15 days and quarterly ones 30 days after
// the period ends. Monthly and quarterly observations are dated on the
// period's first day.
func observationDates(info seriesInfo, from, to synth.Day, now time.Time, loc *time.Location) []synth.Day {
	today := synth.DayOf(now.In(loc))
	from = max(from, info.start)
	var out []synth.Day
	switch info.freq {
	case "m", "q":
		step := 1
		lag := synth.Day(15)
		if info.freq == "q" {
			step, lag = 3, 30
		}
		y, m, _ := from.Civil()
		if info.freq == "q" {
			m = time.Month((int(m)-1)/3*3 + 1)
		}
		for {
			first := synth.Date(y, m, 1)
			nm := time.Month(int(m) + step)
			ny := y
			if nm > 12 {
				nm -= 12
				ny++
			}
			next := synth.Date(ny, nm, 1)
			if first > to || next-1+lag > today {
				break
			}
			if first >= from {
				out = append(out, first)
			}
			y, m = ny, nm
		}
	default:
		// The H.15 release: a business day's value on the next U.S.
		// business day, about 16:00 Chicago (Friday's on Monday).
		latest := synth.LatestNextOpen(synth.Weekdays, synth.US, now, loc, 16)
		end := min(to, latest)
		if end >= from {
			out = make([]synth.Day, 0, int(end-from)*5/7+2)
		}
		for d := from; d <= end; d++ {
			if !d.Weekend() {
				out = append(out, d)
			}
		}
	}
	return out
}

// shapeKeyNotRegistered is FRED's intermittent refusal of a valid key
// (simulator.Shaper): HTTP 400 "The value for variable api_key is not
// registered." in the asked format, for a key that is registered.
const shapeKeyNotRegistered = "key-not-registered"

// Shapes lists FRED's own shapes.
func (p *provider) Shapes() []simulator.ShapeSpec {
	return []simulator.ShapeSpec{{Name: shapeKeyNotRegistered, TakesMessage: true,
		Doc: `HTTP 400 {"error_code":400,"error_message":"Bad Request.  The value for variable api_key is not registered.  Read …"} (XML unless file_type=json) for a valid key`}}
}

// ShapeApplies: the shape answers every observations request.
func (p *provider) ShapeApplies(string, *http.Request, simulator.Route) bool { return true }

// ShapeReply answers with the refusal.
func (p *provider) ShapeReply(shape string, r *http.Request, _ simulator.Route, c simulator.ShapeCall) *simulator.Reply {
	if shape != shapeKeyNotRegistered {
		return nil
	}
	msg := c.Fault.Message
	if msg == "" {
		msg = "Bad Request.  The value for variable api_key is not registered." + keyHelp
	}
	status := simulator.OrStatus(c.Fault.Status, http.StatusBadRequest)
	rep := fail(r.URL.Query().Get("file_type") != "json", status, msg, "fault-shape")
	return rep
}
