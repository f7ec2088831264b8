package ecos_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/ecos"
	"github.com/sluicehq/sluice/registry"
)

const success = `{"StatisticSearch":{"list_total_count":2,"row":[` +
	`{"STAT_CODE":"722Y001","STAT_NAME":"1.3.1. 한국은행 기준금리 및 여수신금리","ITEM_CODE1":"0101000","ITEM_NAME1":"한국은행 기준금리","ITEM_CODE2":null,"ITEM_NAME2":null,"ITEM_CODE3":null,"ITEM_NAME3":null,"ITEM_CODE4":null,"ITEM_NAME4":null,"UNIT_NAME":"연%","WGT":null,"TIME":"20240102","DATA_VALUE":"3.5"},` +
	`{"STAT_CODE":"722Y001","STAT_NAME":"1.3.1. 한국은행 기준금리 및 여수신금리","ITEM_CODE1":"0101000","ITEM_NAME1":"한국은행 기준금리","ITEM_CODE2":null,"ITEM_NAME2":null,"ITEM_CODE3":null,"ITEM_NAME3":null,"ITEM_CODE4":null,"ITEM_NAME4":null,"UNIT_NAME":"연%","WGT":null,"TIME":"20240103","DATA_VALUE":"3.5"}]}}`

// fakeECOS answers StatisticSearch from the wire facts: the key is the
// fourth path segment, errors are RESULT envelopes with HTTP 200.
type fakeECOS struct {
	mu     sync.Mutex
	paths  []string
	answer string
}

func (f *fakeECOS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paths = append(f.paths, r.URL.EscapedPath())
	segs := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	if len(segs) < 11 || segs[0] != "api" || segs[1] != "StatisticSearch" || r.URL.RawQuery != "" {
		fmt.Fprint(w, `{"RESULT":{"CODE":"ERROR-100","MESSAGE":"필수 값이 누락되어 있습니다."}}`)
		return
	}
	if segs[2] != connectortest.Secrets["ECOS_API_KEY"] {
		fmt.Fprint(w, `{"RESULT":{"CODE":"INFO-100","MESSAGE":"인증키가 유효하지 않습니다."}}`)
		return
	}
	if f.answer != "" {
		fmt.Fprint(w, f.answer)
		return
	}
	fmt.Fprint(w, success)
}

func setup(t *testing.T, answer string) (*ecos.Connector, *fakeECOS, *registry.Registry, *connectortest.Log) {
	t.Helper()
	f := &fakeECOS{answer: answer}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	reg := connectortest.Registry(t)
	log, lg := connectortest.NewLog()
	c, err := ecos.New(reg.Provider("ecos"), connector.Options{BaseURL: srv.URL, Credentials: connectortest.Credentials(), Logger: lg,
		Now: func() time.Time { return time.Date(2024, 2, 20, 3, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return c, f, reg, log
}

func request(reg *registry.Registry, id string) connector.Request {
	return connector.Request{Dataset: reg.Dataset(id),
		From: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)}
}

func TestFetchBuildsThePathAndStreamsTheBody(t *testing.T) {
	c, f, reg, log := setup(t, "")
	resp, err := c.Fetch(context.Background(), request(reg, connectortest.ECOSDataset))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != success {
		t.Errorf("body changed: %s", body)
	}
	key := connectortest.Secrets["ECOS_API_KEY"]
	want := "/api/StatisticSearch/" + key + "/json/kr/1/1000/722Y001/D/20240101/20240131/0101000"
	if f.paths[0] != want {
		t.Errorf("path %s\nwant %s", f.paths[0], want)
	}
	if resp.URL != strings.Replace(resp.URL, key, "", 1) || !strings.Contains(resp.URL, "/StatisticSearch/REDACTED/json/") {
		t.Errorf("URL not redacted: %s", resp.URL)
	}
	if resp.More {
		t.Error("2 rows of 1000 reported as more")
	}
	// Monthly dataset, page 3 of 100 rows.
	req := request(reg, connectortest.ECOSMonthly)
	req.Page = 3
	if _, err := c.Fetch(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if want := "/json/kr/201/300/901Y009/M/202401/202401/0"; !strings.HasSuffix(f.paths[1], want) {
		t.Errorf("monthly path %s, want suffix %s", f.paths[1], want)
	}
	connectortest.AssertNoSecrets(t, "log", log.String(), key)
}

func TestErrorsInsideHTTP200(t *testing.T) {
	cases := []struct {
		answer string
		class  connector.Class
		code   string
	}{
		{`{"RESULT":{"CODE":"INFO-200","MESSAGE":"해당하는 데이터가 없습니다."}}`, connector.NoData, "INFO-200"},
		{`{"RESULT":{"CODE":"ERROR-602","MESSAGE":"과도한 OpenAPI호출로 이용이 제한되었습니다. 잠시후 이용해주시기 바랍니다."}}`, connector.RateLimited, "ERROR-602"},
		{`{"RESULT":{"CODE":"ERROR-101","MESSAGE":"주기와 다른 형식의 날짜 형식입니다."}}`, connector.BadRequest, "ERROR-101"},
		{`{"RESULT":{"CODE":"ERROR-400","MESSAGE":"검색범위가 적정범위를 초과하여 60초 TIMEOUT이 발생하였습니다."}}`, connector.BadRequest, "ERROR-400"},
		{`{"RESULT":{"CODE":"ERROR-601","MESSAGE":"SQL 오류입니다."}}`, connector.Transient, "ERROR-601"},
		{`{"StatisticSearch":{"list_total_count":0,"row":[]}}`, connector.NoData, ""},
	}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			c, _, reg, _ := setup(t, tc.answer)
			resp, err := c.Fetch(context.Background(), request(reg, connectortest.ECOSDataset))
			var e *connector.Error
			if resp != nil || !errors.As(err, &e) || e.Class != tc.class || e.Code != tc.code || e.Status != 200 {
				t.Fatalf("err = %#v", err)
			}
			if tc.class == connector.RateLimited && e.RetryAfter != ecos.ThrottleWait {
				t.Errorf("RetryAfter %v", e.RetryAfter)
			}
			connectortest.AssertNoSecrets(t, "error", err.Error(), connectortest.Secrets["ECOS_API_KEY"])
		})
	}
}

func TestBadKeyIsAuthFailedAndRedacted(t *testing.T) {
	f := &fakeECOS{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	reg := connectortest.Registry(t)
	log, lg := connectortest.NewLog()
	c, _ := ecos.New(reg.Provider("ecos"), connector.Options{BaseURL: srv.URL, Logger: lg,
		Credentials: connector.MapCredentials(map[string]string{"ECOS_API_KEY": "WRONGKEY99999"})})
	_, err := c.Fetch(context.Background(), request(reg, connectortest.ECOSDataset))
	if cl, _ := connector.ClassOf(err); cl != connector.AuthFailed {
		t.Fatalf("err = %v", err)
	}
	connectortest.AssertNoSecrets(t, "log", log.String(), "WRONGKEY99999")
	connectortest.AssertNoSecrets(t, "error", err.Error(), "WRONGKEY99999")
}

func TestProbeAsksTheRowsOfARecentWindow(t *testing.T) {
	c, f, reg, _ := setup(t, "")
	if _, err := c.Probe(context.Background(), reg.Dataset(connectortest.ECOSDataset)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Probe(context.Background(), reg.Dataset(connectortest.ECOSMonthly)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(f.paths[0], "/json/kr/1/100/722Y001/D/20240206/20240220/0101000") ||
		!strings.HasSuffix(f.paths[1], "/json/kr/1/100/901Y009/M/202302/202402/0") {
		t.Errorf("probe paths %v", f.paths)
	}
}

func TestFormatDate(t *testing.T) {
	d := time.Date(2024, 8, 16, 0, 0, 0, 0, time.UTC)
	for cycle, want := range map[string]string{"A": "2024", "S": "2024S2", "Q": "2024Q3", "M": "202408", "SM": "202408S2", "D": "20240816"} {
		if got, err := ecos.FormatDate(cycle, d); err != nil || got != want {
			t.Errorf("FormatDate(%s) = %q, %v; want %q", cycle, got, err, want)
		}
	}
	if got, _ := ecos.FormatDate("SM", time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)); got != "202401S1" {
		t.Errorf("SM day 15 = %s", got)
	}
	if got, _ := ecos.FormatDate("Q", time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)); got != "2024Q1" {
		t.Errorf("Q Jan = %s", got)
	}
	if _, err := ecos.FormatDate("W", d); err == nil {
		t.Error("unknown cycle accepted")
	}
}

// TestSpecCycleFormatsAreFormatDate keeps the declared cycle formats
// (Spec, read by planners and the watch) the ones the connector writes.
func TestSpecCycleFormatsAreFormatDate(t *testing.T) {
	days := []time.Time{
		time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), time.Date(2023, 2, 28, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC), time.Date(2024, 1, 16, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 6, 30, 0, 0, 0, 0, time.UTC), time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for _, c := range ecos.Spec.Dates.Cycles {
		for _, d := range days {
			want, err := ecos.FormatDate(c.Code, d)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Format.Write(d); got != want {
				t.Errorf("cycle %s, %s: spec writes %q, the connector %q", c.Code, d.Format(time.DateOnly), got, want)
			}
			start, err := c.Format.Parse(want)
			if err != nil || !start.Equal(c.Unit.Floor(d)) {
				t.Errorf("cycle %s: %q parses as %v (%v), want the %s holding %s", c.Code, want, start, err, c.Unit, d.Format(time.DateOnly))
			}
		}
	}
}
