package fred_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/fred"
	"github.com/sluicehq/sluice/registry"
)

const success = `{"realtime_start":"2024-02-01","realtime_end":"2024-02-01","observation_start":"2024-01-01","observation_end":"2024-01-05",` +
	`"units":"lin","output_type":1,"file_type":"json","order_by":"observation_date","sort_order":"asc","count":3,"offset":0,"limit":100000,` +
	`"observations":[{"realtime_start":"2024-02-01","realtime_end":"2024-02-01","date":"2024-01-02","value":"3.95"},` +
	`{"realtime_start":"2024-02-01","realtime_end":"2024-02-01","date":"2024-01-03","value":"3.91"},` +
	`{"realtime_start":"2024-02-01","realtime_end":"2024-02-01","date":"2024-01-04","value":"."}]}`

// fakeFRED answers series/observations from the wire facts.
type fakeFRED struct {
	mu      sync.Mutex
	queries []url.Values
	status  int
	answer  string
	header  http.Header
}

func (f *fakeFRED) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := r.URL.Query()
	f.queries = append(f.queries, q)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if r.URL.Path != fred.ObservationsPath {
		w.WriteHeader(404)
		fmt.Fprint(w, `{"error_code":404,"error_message":"Not Found"}`)
		return
	}
	if q.Get("api_key") != connectortest.Secrets["FRED_API_KEY"] {
		w.WriteHeader(400)
		fmt.Fprint(w, `{"error_code":400,"error_message":"Bad Request.  The value for variable api_key is not registered.  Read https:\/\/fred.stlouisfed.org\/docs\/api\/api_key.html for more information."}`)
		return
	}
	for k, vs := range f.header {
		w.Header()[k] = vs
	}
	if f.status != 0 {
		w.WriteHeader(f.status)
	}
	if f.answer != "" {
		fmt.Fprint(w, f.answer)
		return
	}
	fmt.Fprint(w, success)
}

func setup(t *testing.T, f *fakeFRED, creds connector.Credentials) (*fred.Connector, *registry.Registry, *connectortest.Log) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	reg := connectortest.Registry(t)
	log, lg := connectortest.NewLog()
	if creds == nil {
		creds = connectortest.Credentials()
	}
	c, err := fred.New(reg.Provider("fred"), connector.Options{BaseURL: srv.URL, Credentials: creds, Logger: lg,
		Now: func() time.Time { return time.Date(2024, 2, 1, 15, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return c, reg, log
}

func request(reg *registry.Registry) connector.Request {
	return connector.Request{Dataset: reg.Dataset(connectortest.FREDDataset),
		From: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 1, 5, 0, 0, 0, 0, time.UTC)}
}

func TestFetch(t *testing.T) {
	f := &fakeFRED{}
	c, reg, log := setup(t, f, nil)
	resp, err := c.Fetch(context.Background(), request(reg))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != success {
		t.Errorf("body changed")
	}
	q := f.queries[0]
	for k, want := range map[string]string{"series_id": "DGS10", "file_type": "json", "observation_start": "2024-01-01", "observation_end": "2024-01-05"} {
		if q.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, q.Get(k), want)
		}
	}
	if q.Has("limit") || q.Has("offset") {
		t.Errorf("unasked paging: %v", q)
	}
	if resp.More || resp.Ext != "json" {
		t.Errorf("resp %+v", resp)
	}
	connectortest.AssertNoSecrets(t, "URL", resp.URL, connectortest.Secrets["FRED_API_KEY"])
	connectortest.AssertNoSecrets(t, "log", log.String(), connectortest.Secrets["FRED_API_KEY"])
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name   string
		status int
		answer string
		header http.Header
		class  connector.Class
		wait   time.Duration
	}{
		{"429", 429, `{"error_code":429,"error_message":"Too Many Requests.  Exceeded Rate Limit"}`, nil, connector.RateLimited, fred.RateLimitWait},
		{"429 Retry-After", 429, `{"error_code":429,"error_message":"Too Many Requests.  Exceeded Rate Limit"}`, http.Header{"Retry-After": {"7"}}, connector.RateLimited, 7 * time.Second},
		{"400 series", 400, `{"error_code":400,"error_message":"Bad Request.  The series does not exist."}`, nil, connector.BadRequest, 0},
		{"404", 404, `{"error_code":404,"error_message":"Not Found"}`, nil, connector.BadRequest, 0},
		{"423", 423, `{"error_code":423,"error_message":"Locked"}`, nil, connector.Transient, 0},
		{"500", 500, `{"error_code":500,"error_message":"Internal Server Error"}`, nil, connector.Transient, 0},
		{"500 html", 500, `<html>oops</html>`, nil, connector.Transient, 0},
		{"no observations", 200, `{"realtime_start":"2024-02-01","count":0,"offset":0,"limit":100000,"observations":[]}`, nil, connector.NoData, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, reg, _ := setup(t, &fakeFRED{status: tc.status, answer: tc.answer, header: tc.header}, nil)
			_, err := c.Fetch(context.Background(), request(reg))
			var e *connector.Error
			if !errors.As(err, &e) || e.Class != tc.class || e.RetryAfter != tc.wait {
				t.Fatalf("err = %#v", err)
			}
		})
	}
}

// TestUnregisteredKeyIsAuthFailed: FRED's "api_key is not registered" is
// AuthFailed once connector.DefaultConfirm of them came in a row; the ones
// before are Transient (FRED says it now and then of a valid key under
// load). No answer leaks the key.
func TestUnregisteredKeyIsAuthFailed(t *testing.T) {
	bad := "0000000000000000000000000000dead"
	c, reg, log := setup(t, &fakeFRED{}, connector.MapCredentials(map[string]string{"FRED_API_KEY": bad}))
	for i := 1; i <= connector.DefaultConfirm; i++ {
		_, err := c.Fetch(context.Background(), request(reg))
		var e *connector.Error
		if !errors.As(err, &e) || e.Code != "400" || e.Status != 400 {
			t.Fatalf("answer %d: err = %#v", i, err)
		}
		if i < connector.DefaultConfirm && (e.Class != connector.Transient || e.Unconfirmed != connector.AuthFailed) {
			t.Errorf("answer %d: %v, want transient until confirmed", i, err)
		}
		if i == connector.DefaultConfirm && e.Class != connector.AuthFailed {
			t.Errorf("answer %d: %v, want auth_failed, confirmed", i, err)
		}
		connectortest.AssertNoSecrets(t, "error", err.Error(), bad)
	}
	connectortest.AssertNoSecrets(t, "log", log.String(), bad)
}

func TestPagingAndProbe(t *testing.T) {
	f := &fakeFRED{}
	c, reg, _ := setup(t, f, nil)
	req := request(reg)
	req.Limit, req.Page = 2, 1
	resp, err := c.Fetch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !resp.More || f.queries[0].Get("limit") != "2" || f.queries[0].Has("offset") {
		t.Errorf("page 1 of 2 rows: more=%v query=%v", resp.More, f.queries[0])
	}
	req.Page = 2
	resp, err = c.Fetch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.More || f.queries[1].Get("offset") != "2" {
		t.Errorf("page 2: more=%v query=%v", resp.More, f.queries[1])
	}
	if _, err := c.Probe(context.Background(), reg.Dataset(connectortest.FREDDataset)); err != nil {
		t.Fatal(err)
	}
	q := f.queries[2]
	if q.Get("limit") != "1" || q.Get("sort_order") != "desc" || q.Get("observation_end") != "2024-02-01" || q.Get("observation_start") != "2022-12-28" {
		t.Errorf("probe query %v", q)
	}
}
