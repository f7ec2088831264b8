package fred

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/simtest"
)

// fredGet calls DGS10 (from 1 March 2025 unless query names a start: the
// whole series is 1.5 MB).
func fredGet(h *simtest.Harness, query string) simtest.Response {
	h.T.Helper()
	if !strings.Contains(query, "observation_start") {
		query += "&observation_start=2025-03-01"
	}
	return h.Get("/fred/series/observations?series_id=DGS10&api_key="+h.Creds["FRED_API_KEY"]+"&file_type=json"+query, nil)
}

type fredAnswer struct {
	Count        int `json:"count"`
	Offset       int `json:"offset"`
	Limit        int `json:"limit"`
	Observations []struct {
		Date  string `json:"date"`
		Value string `json:"value"`
	} `json:"observations"`
	ErrorCode    int    `json:"error_code"`
	ErrorMessage string `json:"error_message"`
}

func TestFREDObservations(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 1000 })
	r := fredGet(h, "&observation_start=2024-12-20&observation_end=2025-01-05")
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	wantKeys := []string{"realtime_start", "realtime_end", "observation_start", "observation_end", "units", "output_type", "file_type",
		"order_by", "sort_order", "count", "offset", "limit", "observations"}
	if got := simtest.KeysOf(t, r.Body); !reflect.DeepEqual(got, wantKeys) {
		t.Errorf("keys\n got %v\nwant %v", got, wantKeys)
	}
	var a fredAnswer
	simtest.MustJSON(t, r.Body, &a)
	var dates, values []string
	for _, o := range a.Observations {
		dates = append(dates, o.Date)
		values = append(values, o.Value)
	}
	wantDates := []string{"2024-12-20", "2024-12-23", "2024-12-24", "2024-12-25", "2024-12-26", "2024-12-27", "2024-12-30", "2024-12-31", "2025-01-01", "2025-01-02", "2025-01-03"}
	if !reflect.DeepEqual(dates, wantDates) || a.Count != len(wantDates) || a.Limit != 100000 {
		t.Fatalf("dates %v count %d", dates, a.Count)
	}
	for i, v := range values {
		holiday := dates[i] == "2024-12-25" || dates[i] == "2025-01-01"
		if holiday != (v == ".") {
			t.Errorf("%s: value %q (holiday %v)", dates[i], v, holiday)
		}
		if !holiday && (len(v) < 4 || v[len(v)-3] != '.') {
			t.Errorf("%s: value %q has not two decimals", dates[i], v)
		}
	}
	var raw struct {
		Realtime string `json:"realtime_start"`
	}
	simtest.MustJSON(t, r.Body, &raw)
	if raw.Realtime != "2025-03-11" { // 14:30 KST is 00:30 CDT
		t.Errorf("realtime_start %s", raw.Realtime)
	}

	// limit/offset and desc.
	h.Clock.Advance(time.Second)
	r = fredGet(h, "&observation_start=2024-12-20&observation_end=2025-01-05&limit=3&offset=2&sort_order=desc")
	simtest.MustJSON(t, r.Body, &a)
	if a.Count != 11 || len(a.Observations) != 3 || a.Observations[0].Date != "2025-01-01" {
		t.Errorf("desc page: %+v", a)
	}

	// XML is the default.
	h.Clock.Advance(time.Second)
	r = h.Get("/fred/series/observations?series_id=DGS10&api_key="+h.Creds["FRED_API_KEY"]+"&observation_start=2025-01-02&observation_end=2025-01-03", nil)
	var x struct {
		XMLName xml.Name `xml:"observations"`
		Count   int      `xml:"count,attr"`
		Obs     []struct {
			Date  string `xml:"date,attr"`
			Value string `xml:"value,attr"`
		} `xml:"observation"`
	}
	if err := xml.Unmarshal(r.Body, &x); err != nil || x.Count != 2 || len(x.Obs) != 2 || x.Obs[1].Date != "2025-01-03" {
		t.Errorf("xml: %v %s", err, r.Body)
	}

	// Monthly series, dated on the first of the month; February is not
	// yet published on 11 March.
	h.Clock.Advance(time.Second)
	r = h.Get("/fred/series/observations?series_id=CPIAUCSL&file_type=json&api_key="+h.Creds["FRED_API_KEY"]+"&observation_start=2024-11-01", nil)
	simtest.MustJSON(t, r.Body, &a)
	if len(a.Observations) != 3 || a.Observations[2].Date != "2025-01-01" {
		t.Errorf("monthly: %+v", a.Observations)
	}
}

func TestFREDErrors(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 1000 })
	help := "  Read https://fred.stlouisfed.org/docs/api/api_key.html for more information."
	cases := []struct {
		query  string
		status int
		msg    string
	}{
		{"series_id=DGS10&file_type=json", 400, "Bad Request.  Variable api_key is not set." + help},
		{"series_id=DGS10&file_type=json&api_key=ABC", 400, "Bad Request.  The value for variable api_key is not a 32 character alpha-numeric lower-case string." + help},
		{"series_id=DGS10&file_type=json&api_key=" + strings.Repeat("a", 32), 400, "Bad Request.  The value for variable api_key is not registered." + help},
		{"series_id=NOPE&file_type=json&api_key=" + h.Creds["FRED_API_KEY"], 400, "Bad Request.  The series does not exist."},
		{"file_type=json&api_key=" + h.Creds["FRED_API_KEY"], 400, "Bad Request.  Variable series_id is not set."},
		{"series_id=DGS10&file_type=json&observation_start=2025/01/01&api_key=" + h.Creds["FRED_API_KEY"], 400, ""},
		{"series_id=DGS10&file_type=json&limit=0&api_key=" + h.Creds["FRED_API_KEY"], 400, ""},
	}
	for _, c := range cases {
		h.Clock.Advance(time.Second)
		r := h.Get("/fred/series/observations?"+c.query, nil)
		var a fredAnswer
		simtest.MustJSON(t, r.Body, &a)
		if r.Status != c.status || a.ErrorCode != c.status || (c.msg != "" && a.ErrorMessage != c.msg) || a.ErrorMessage == "" {
			t.Errorf("%s: %d %s", c.query, r.Status, r.Body)
		}
	}
	if got := h.Stats().Providers["fred"].AuthFailures; got != 3 {
		t.Errorf("auth failures %d, want 3", got)
	}
}

func TestFREDRateLimit(t *testing.T) {
	h := simtest.New(t, nil)
	fredGet(h, "")
	fredGet(h, "")
	r := fredGet(h, "")
	var a fredAnswer
	simtest.MustJSON(t, r.Body, &a)
	if r.Status != http.StatusTooManyRequests || a.ErrorCode != 429 || a.ErrorMessage != "Too Many Requests.  Exceeded Rate Limit" {
		t.Fatalf("third call in a second: %d %s", r.Status, r.Body)
	}
	if !json.Valid(r.Body) {
		t.Error("429 body is not JSON")
	}
}

// TestEveryDefaultDataset asks for every FRED dataset of the default
// registry the way the connector would: each answers with data.
func TestEveryDefaultDataset(t *testing.T) {
	simtest.EveryDefaultDataset(t, "fred", 4, func(h *simtest.Harness, ds *registry.Dataset) (bool, simtest.Response) {
		r := h.Get("/fred/series/observations?file_type=json&observation_start=2024-01-01&series_id="+ds.Request.SeriesID+"&api_key="+h.Creds["FRED_API_KEY"], nil)
		var ans fredAnswer
		simtest.MustJSON(t, r.Body, &ans)
		return len(ans.Observations) > 0, r
	})
}

func TestTestCredentialsShapes(t *testing.T) {
	simtest.AssertCredentialShapes(t, map[string]string{"FRED_API_KEY": `^[a-z0-9]{32}$`})
}

func TestSameRequestSameBytes(t *testing.T) {
	simtest.AssertDeterministic(t, func(h *simtest.Harness) map[string][]byte {
		return map[string][]byte{"fred": fredGet(h, "&observation_start=2024-01-01").Body}
	}, "fred")
}

// TestFREDPublishesOnBusinessDays: a day's yield comes out with the H.15
// release of the next U.S. business day, about 16:00 Chicago: Friday's on
// Monday, none on a weekend or holiday.
func TestFREDPublishesOnBusinessDays(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 1000 })
	chicago, err := time.LoadLocation("America/Chicago")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		now  time.Time
		want string
	}{
		{time.Date(2026, 11, 28, 12, 0, 0, 0, chicago), "2026-11-26"}, // Saturday: Thursday's came out on Friday
		{time.Date(2026, 11, 30, 7, 0, 0, 0, chicago), "2026-11-26"},  // Monday morning
		{time.Date(2026, 11, 30, 16, 30, 0, 0, chicago), "2026-11-27"},
		{time.Date(2026, 12, 1, 7, 0, 0, 0, chicago), "2026-11-27"}, // Tuesday 07:00, when the registry's ingest runs
	} {
		h.Clock.Set(tc.now)
		var a fredAnswer
		simtest.MustJSON(t, fredGet(h, "&observation_start=2026-11-20&observation_end=2026-12-31").Body, &a)
		if n := len(a.Observations); n == 0 || a.Observations[n-1].Date != tc.want {
			t.Errorf("at %s: observations %+v, want the newest %s", tc.now, a.Observations, tc.want)
		}
	}
}
