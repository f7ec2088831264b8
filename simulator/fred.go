package simulator

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/simulator/synth"
)

const fredKeyHelp = "  Read https://fred.stlouisfed.org/docs/api/api_key.html for more information."

// fredSeriesInfo describes known series; any other registry series is a
// daily one from 1990 on.
type fredSeriesInfo struct {
	freq  string // d, m, q
	start synth.Day
	base  float64
	vol   float64
	dec   int
	units string
}

var fredKnown = map[string]fredSeriesInfo{
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

// fredError answers with FRED's error body in the asked format.
func fredError(xml bool, status int, msg, outcome string) *reply {
	if xml {
		b := []byte(`<?xml version="1.0" encoding="utf-8" ?>` + "\n" + `<error code="` + strconv.Itoa(status) + `" message="`)
		b = appendXMLText(b, msg)
		b = append(b, "\"/>\n"...)
		return newReply(status, "text/xml; charset=UTF-8", b, outcome)
	}
	var w jw
	w.open('{')
	w.kint("error_code", int64(status))
	w.kstr("error_message", msg)
	w.close('}')
	return newReply(status, "application/json; charset=UTF-8", w.b, outcome)
}

func isFREDKey(k string) bool {
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

// serveFRED answers GET /fred/series/observations.
func (s *Simulator) serveFRED(r *http.Request, rt route, fraction float64) *reply {
	q := r.URL.Query()
	fileType := q.Get("file_type")
	xml := fileType != "json"
	if fileType != "" && fileType != "json" && fileType != "xml" {
		return fredError(false, http.StatusBadRequest, "Bad Request.  Variable file_type is not one of the following values: 'xml', 'json'.", "error")
	}
	key := q.Get("api_key")
	switch {
	case key == "":
		return fredError(xml, http.StatusBadRequest, "Bad Request.  Variable api_key is not set."+fredKeyHelp, "auth")
	case !isFREDKey(key):
		return fredError(xml, http.StatusBadRequest, "Bad Request.  The value for variable api_key is not a 32 character alpha-numeric lower-case string."+fredKeyHelp, "auth")
	}
	ps := s.credentialOwner("fred", "api_key", key)
	if ps == nil {
		return fredError(xml, http.StatusBadRequest, "Bad Request.  The value for variable api_key is not registered."+fredKeyHelp, "auth")
	}
	if adm := s.admit(ps, s.datasetScopes(ps, rt.ds), fraction); !adm.ok {
		return fredError(xml, http.StatusTooManyRequests, "Too Many Requests.  Exceeded Rate Limit", "limit")
	}
	seriesID := q.Get("series_id")
	if seriesID == "" {
		return fredError(xml, http.StatusBadRequest, "Bad Request.  Variable series_id is not set.", "error")
	}
	if rt.ds == nil {
		return fredError(xml, http.StatusBadRequest, "Bad Request.  The series does not exist.", "error")
	}
	obsStart, obsEnd := synth.Date(1776, 7, 4), synth.Date(9999, 12, 31)
	var ok bool
	if v := q.Get("observation_start"); v != "" {
		if obsStart, ok = synth.ParseISO(v); !ok {
			return fredError(xml, http.StatusBadRequest, "Bad Request.  Variable observation_start is not a valid date in the format YYYY-MM-DD.", "error")
		}
	}
	if v := q.Get("observation_end"); v != "" {
		if obsEnd, ok = synth.ParseISO(v); !ok {
			return fredError(xml, http.StatusBadRequest, "Bad Request.  Variable observation_end is not a valid date in the format YYYY-MM-DD.", "error")
		}
	}
	if obsStart > obsEnd {
		return fredError(xml, http.StatusBadRequest, "Bad Request.  The value for variable observation_start is after observation_end.", "error")
	}
	limit, offset := 100000, 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100000 {
			return fredError(xml, http.StatusBadRequest, "Bad Request.  Variable limit is not between 1 and 100000.", "error")
		}
		limit = n
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fredError(xml, http.StatusBadRequest, "Bad Request.  Variable offset is not a non-negative integer.", "error")
		}
		offset = n
	}
	sortOrder := q.Get("sort_order")
	switch sortOrder {
	case "":
		sortOrder = "asc"
	case "asc", "desc":
	default:
		return fredError(xml, http.StatusBadRequest, "Bad Request.  Variable sort_order is not one of the following values: 'asc', 'desc'.", "error")
	}

	info, known := fredKnown[seriesID]
	if !known {
		info = fredSeriesInfo{"d", synth.Date(1990, 1, 2), pick(s.seed, "fred|"+seriesID, 1, 200), 0.01, 2, "lin"}
	}
	now := s.now()
	loc := ps.p.Location
	today := synth.DayOf(now.In(loc))
	dates := fredDates(info, obsStart, obsEnd, now, loc)
	count := len(dates)
	if sortOrder == "desc" {
		for i, j := 0, len(dates)-1; i < j; i, j = i+1, j-1 {
			dates[i], dates[j] = dates[j], dates[i]
		}
	}
	page := dates[min(offset, count):min(offset+limit, count)]
	series := synth.NewSeries(s.seed, "fred|"+seriesID, info.base, info.vol)
	value := func(d synth.Day) string {
		if info.freq == "d" && synth.USHoliday(d) {
			return "."
		}
		return formatFixed(series.Value(d), info.dec)
	}
	rtDay := today.ISO()
	if xml {
		b := make([]byte, 0, 512+120*len(page))
		b = append(b, `<?xml version="1.0" encoding="utf-8" ?>`+"\n"...)
		b = append(b, `<observations realtime_start="`+rtDay+`" realtime_end="`+rtDay+`" observation_start="`+obsStart.ISO()+
			`" observation_end="`+obsEnd.ISO()+`" units="lin" output_type="1" file_type="xml" order_by="observation_date" sort_order="`+
			sortOrder+`" count="`+strconv.Itoa(count)+`" offset="`+strconv.Itoa(offset)+`" limit="`+strconv.Itoa(limit)+`">`+"\n"...)
		for _, d := range page {
			b = append(b, `  <observation realtime_start="`+rtDay+`" realtime_end="`+rtDay+`" date="`...)
			b = d.AppendISO(b)
			b = append(b, `" value="`+value(d)+`"/>`+"\n"...)
		}
		b = append(b, "</observations>\n"...)
		return newReply(http.StatusOK, "text/xml; charset=UTF-8", b, "ok")
	}
	w := jw{b: make([]byte, 0, 512+100*len(page))}
	w.open('{')
	w.kstr("realtime_start", rtDay)
	w.kstr("realtime_end", rtDay)
	w.kstr("observation_start", obsStart.ISO())
	w.kstr("observation_end", obsEnd.ISO())
	w.kstr("units", info.units)
	w.kint("output_type", 1)
	w.kstr("file_type", "json")
	w.kstr("order_by", "observation_date")
	w.kstr("sort_order", sortOrder)
	w.kint("count", int64(count))
	w.kint("offset", int64(offset))
	w.kint("limit", int64(limit))
	w.key("observations")
	w.open('[')
	for _, d := range page {
		w.open('{')
		w.kstr("realtime_start", rtDay)
		w.kstr("realtime_end", rtDay)
		w.kstr("date", d.ISO())
		w.kstr("value", value(d))
		w.close('}')
	}
	w.close(']')
	w.close('}')
	return newReply(http.StatusOK, "application/json; charset=UTF-8", w.b, "ok")
}

// fredDates lists a series' observation dates in [from, to] that are
// published at now: daily values (weekdays; holidays carry ".") the next
// day from 16:00, monthly ones 15 days and quarterly ones 30 days after
// the period ends. Monthly and quarterly observations are dated on the
// period's first day.
func fredDates(info fredSeriesInfo, from, to synth.Day, now time.Time, loc *time.Location) []synth.Day {
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
		latest := latestDay(synth.Weekdays, now, loc, 1, 16)
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
