package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/planner"
)

// failTransport fails the test on any HTTP request.
type failTransport struct{ t *testing.T }

func (f failTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("sluice plan sent an HTTP request to %s", r.URL)
	return nil, http.ErrNotSupported
}

// sluice plan calls no provider and no Temporal server: with a listener
// standing in for Temporal and every HTTP request failing the test, a full
// backfill plan and a daily plan connect to nothing.
func TestPlanDialsNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	t.Setenv("SLUICE_TEMPORAL", ln.Addr().String())
	old := http.DefaultTransport
	http.DefaultTransport = failTransport{t}
	defer func() { http.DefaultTransport = old }()
	for _, args := range [][]string{
		{"plan", "--from", "2016-01-01", "--to", "2026-08-31"},
		{"plan", "--date", "2026-11-27", "--json"},
	} {
		if _, errOut, err := runCmd(t, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut)
		}
	}
	time.Sleep(50 * time.Millisecond) // let a stray connection be accepted
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d connection(s) to the Temporal address", n)
	}
}

func TestPlanBackfillText(t *testing.T) {
	out, _, err := runCmd(t, "plan", "--from", "2016-01-01", "--to", "2026-08-31")
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	for _, want := range []string{
		"plan: backfill 2016-01-01..2026-08-31 — 192 dataset(s)",
		"no provider was called",
		"scope  datasets  chunks  calls  daily quota  reserved",
		"one call per dataset per day: 748,032 calls; this plan:",
		"kis/key: spans 10 provider-days: 6,400 calls at a share of 700 a day (daily quota 1,000 less 300 reserved)",
		"kis/key: requests_per_day",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The KIS row: 100 datasets, 6,400 chunks and calls, the defaulted
	// quota flagged, 300 reserved, 700 a day, 10 provider-days.
	var row []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "kis/key" {
			row = f
			break
		}
	}
	if strings.Join(row[:8], " ") != "kis/key 100 6,400 6,400 1,000* 300 700 10" {
		t.Errorf("kis row %q", row)
	}
}

func TestPlanJSON(t *testing.T) {
	out, _, err := runCmd(t, "plan", "--from", "2024-01-01", "--to", "2024-12-31", "--provider", "kis", "--provider", "fred", "--dataset", "fred-dgs10", "--dataset", "kis-index-0001-kospi", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var p planner.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("decoding: %v\n%s", err, out)
	}
	if p.Kind != "backfill" || p.Totals.Datasets != 2 || len(p.Scopes) != 2 || p.Totals.Calls != 6+1 {
		t.Errorf("plan %+v", p)
	}
	if c := p.Chunks[0]; c.Dataset != "fred-dgs10" || c.From != "2024-01-01" || c.To != "2024-12-31" || c.Calls != 1 || c.Scopes[0] != "fred/key" {
		t.Errorf("first chunk %+v", c)
	}
	if c := p.Chunks[1]; c.Dataset != "kis-index-0001-kospi" || c.From != "2024-01-01" || c.To != "2024-02-29" {
		t.Errorf("second chunk %+v", c)
	}
}

func TestPlanDaily(t *testing.T) {
	out, _, err := runCmd(t, "plan", "--date", "2026-11-27", "--provider", "datago")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "plan: daily run for 2026-11-27 — 4 dataset(s)") || !strings.Contains(out, "datago/service/15094807") {
		t.Errorf("output:\n%s", out)
	}
}

func TestPlanBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--from", "2016-13-01", "--to", "2026-08-31"}, `--from "2016-13-01": want a date YYYY-MM-DD`},
		{[]string{"plan", "--from", "2016-01-01", "--to", "soon"}, `--to "soon"`},
		{[]string{"plan", "--date", "yesterday"}, `--date "yesterday"`},
		{[]string{"plan", "--from", "2016-01-02", "--to", "2016-01-01"}, `--to "2016-01-01" is before --from "2016-01-02"`},
		{[]string{"plan", "--from", "2016-01-01"}, "give --from and --to"},
		{[]string{"plan", "--date", "2026-11-27", "--from", "2016-01-01"}, "not both"},
		{[]string{"plan", "--date", "2026-11-27", "--provider", "ecoss"}, `--provider "ecoss": no such provider`},
		{[]string{"plan", "--from", "2016-01-01", "--to", "2016-01-31", "--dataset", "nope"}, `--dataset "nope": no such dataset`},
		{[]string{"plan", "--from", "2016-01-01", "--to", "2016-01-31", "--start", "noon"}, `--start "noon"`},
	} {
		_, _, err := runCmd(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
