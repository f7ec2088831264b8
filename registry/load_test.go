package registry

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func testOpts() Options { return Options{Now: func() time.Time { return testNow }} }

// baseProviders is a valid providers.yaml the cases below mutate. Line
// numbers in expected messages refer to it.
const baseProviders = `defaults:
  probe_headroom: 2
  stale_after_days: 180
  unknown_limits:
    requests_per_second: 1
    requests_per_day: 1000
providers:
  - id: datago
    timezone: Asia/Seoul
    auth: service_key
    rate_limits:
      - scope: service
        requests_per_day: 5000
        min_interval_seconds: 2
        source: {url: "https://www.data.go.kr/data/15073861/openapi.do", verified_at: 2026-10-01}
    terms_source: {url: "https://www.data.go.kr/data/15073861/openapi.do", verified_at: 2026-10-01}
  - id: kis
    timezone: Asia/Seoul
    auth: kis_oauth2
    rate_limits:
      - scope: key
        requests_per_second: 5
        requests_per_day: unknown
        source: {url: "https://apiportal.koreainvestment.com/intro", verified_at: 2026-11-01}
    terms_source: {url: "https://apiportal.koreainvestment.com/intro", verified_at: 2026-11-01}
`

const tourDataset = `id: tour
provider: datago
scope_key: "15073861"
request:
  path: /B551011/KorService1/areaBasedList1
  params: {_type: json, eventStartDate: "{from}"}
probe:
  interval_minutes: 60
ingest:
  schedule: "0 11 * * *"
`

func load(t *testing.T, providers string, datasets map[string]string) (*Registry, error) {
	t.Helper()
	fsys := fstest.MapFS{"providers.yaml": {Data: []byte(providers)}, "datasets": {Mode: 0o755 | 1<<31}}
	for name, body := range datasets {
		fsys["datasets/"+name] = &fstest.MapFile{Data: []byte(body)}
	}
	return Load(fsys, "registry", testOpts())
}

func TestLoadValid(t *testing.T) {
	reg, err := load(t, baseProviders, map[string]string{"tour.yaml": tourDataset})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	ds := reg.Dataset("tour")
	// Its request asks one day a call (eventStartDate={from}): a daily
	// run asks each day of its 10-day look-back, 10 calls.
	if ds == nil || ds.ScopeKey != "15073861" || ds.Probe.PerDay() != 24 || ds.Ingest.LookBack != 10 || ds.Ingest.CallsPerDay() != 10 {
		t.Fatalf("tour dataset = %+v", ds)
	}
	s := reg.Scope("datago/service/15073861")
	if s == nil || len(s.Datasets) != 1 {
		t.Fatalf("scope datago/service/15073861 = %+v", s)
	}
	if got := s.Demand(reg.Defaults.ProbeHeadroom); got.Total != 24*2+10 {
		t.Errorf("demand = %+v, want total 58", got)
	}
	kis := reg.Scope("kis/key")
	if kis == nil {
		t.Fatal("no kis/key scope")
	}
	w, ok := kis.Limit.Window(24 * time.Hour)
	if !ok || !w.Unknown || !w.Defaulted || w.Count != 1000 {
		t.Errorf("kis effective requests_per_day = %+v, want unknown defaulted to 1000", w)
	}
	if got := reg.Provider("datago").Auth.Credentials["service_key"]; got != "DATAGO_SERVICE_KEY" {
		t.Errorf("default credential name = %q", got)
	}
	if got := reg.Provider("datago").Auth.Param; got != "serviceKey" {
		t.Errorf("default auth param = %q", got)
	}
	params := ds.Request.ExpandParams(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	if params[1].Value != "20261129" {
		t.Errorf("expanded {from} = %q", params[1].Value)
	}
}

func TestLoadProblems(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(baseProviders, old) {
			t.Fatalf("base providers lacks %q", old)
		}
		return strings.Replace(baseProviders, old, new, 1)
	}
	tests := []struct {
		name      string
		providers string
		datasets  map[string]string
		want      []string // every line of the error, in order
	}{
		{
			name:      "unknown provider field",
			providers: replace("    timezone: Asia/Seoul\n    auth: service_key", "    timezone: Asia/Seoul\n    colour: blue\n    auth: service_key"),
			want:      []string{`registry/providers.yaml:10: providers[0].colour: unknown field "colour" (allowed: id, name, base_url, timezone, connector, auth, rate_limits, terms, terms_source, bounds, freshness, notice, maintenance)`},
		},
		{
			name:      "wrong type for a count",
			providers: replace("requests_per_day: 5000", `requests_per_day: "5000"`),
			want:      []string{`registry/providers.yaml:13: providers[0].rate_limits[0].requests_per_day: expected a whole number, got "5000" (a quoted string: remove the quotes)`},
		},
		{
			name:      "zero count",
			providers: replace("requests_per_second: 5", "requests_per_second: 0"),
			want:      []string{`registry/providers.yaml:22: providers[1].rate_limits[0].requests_per_second: must be positive, got 0 (a limit of zero allows no call at all; write unknown if the number is not known)`},
		},
		{
			name:      "per-second count contradicts the minimum interval",
			providers: replace("requests_per_second: 5", "requests_per_second: 5\n        min_interval_seconds: 1"),
			want:      []string{`registry/providers.yaml:21: providers[1].rate_limits[0].requests_per_second: requests_per_second 5 contradicts min_interval_seconds 1: at most 1 call(s) fit in a second`},
		},
		{
			name: "empty rate_limits list",
			providers: replace(`    rate_limits:
      - scope: key
        requests_per_second: 5
        requests_per_day: unknown
        source: {url: "https://apiportal.koreainvestment.com/intro", verified_at: 2026-11-01}`, "    rate_limits: []"),
			want: []string{"registry/providers.yaml:20: providers[1].rate_limits: provider \"kis\" declares an empty list: its datasets would be called with no permit at all; declare its limits, or write `rate_limits: unknown` so the conservative defaults apply"},
		},
		{
			name:      "minimum interval that rounds to zero, alone",
			providers: replace("requests_per_day: 5000\n        min_interval_seconds: 2", "min_interval_seconds: 1e-10"),
			want:      []string{`registry/providers.yaml:13: providers[0].rate_limits[0].min_interval_seconds: 1e-10 seconds is below the limiter's resolution of 0.001 s: it would round to no interval at all; give at least 0.001, or drop the field`},
		},
		{
			name:      "minimum interval that rounds to zero, beside a window",
			providers: replace("min_interval_seconds: 2", "min_interval_seconds: 0.0000001"),
			want:      []string{`registry/providers.yaml:14: providers[0].rate_limits[0].min_interval_seconds: 0.0000001 seconds is below the limiter's resolution of 0.001 s: it would round to no interval at all; give at least 0.001, or drop the field`},
		},
		{
			name:      "window count no limiter can keep",
			providers: replace("requests_per_second: 5", "requests_per_second: 2000000000"),
			want:      []string{`registry/providers.yaml:22: providers[1].rate_limits[0].requests_per_second: requests_per_second 2000000000 is more than the limiter can keep: at most 10000 calls per window shorter than a day (it remembers one grant per call of the window)`},
		},
		{
			name:      "duplicate provider id",
			providers: replace("  - id: kis", "  - id: datago"),
			want:      []string{`registry/providers.yaml:17: providers[1].id: duplicate provider id "datago" (first declared at registry/providers.yaml:8)`},
		},
		{
			name:      "bad date",
			providers: replace("verified_at: 2026-11-01}\n    terms_source", "verified_at: 2026-13-01}\n    terms_source"),
			want:      []string{`registry/providers.yaml:24: providers[1].rate_limits[0].source.verified_at: invalid date "2026-13-01": expected YYYY-MM-DD`},
		},
		{
			name: "bad URL",
			providers: replace(`url: "https://apiportal.koreainvestment.com/intro", verified_at: 2026-11-01}
    terms_source`, `url: "apiportal.koreainvestment.com/intro", verified_at: 2026-11-01}
    terms_source`),
			want: []string{`registry/providers.yaml:24: providers[1].rate_limits[0].source.url: invalid URL "apiportal.koreainvestment.com/intro": expected an absolute http:// or https:// URL`},
		},
		{
			name:      "unknown timezone",
			providers: replace("  - id: kis\n    timezone: Asia/Seoul", "  - id: kis\n    timezone: Asia/Busan"),
			want:      []string{`registry/providers.yaml:18: providers[1].timezone: unknown timezone "Asia/Busan": expected an IANA name such as Asia/Seoul or UTC`},
		},
		{
			name:      "credential value instead of a name",
			providers: replace("auth: kis_oauth2", "auth:\n      strategy: kis_oauth2\n      credentials: {app_key: PSabcdefgh12345}"),
			want:      []string{`registry/providers.yaml:21: providers[1].auth.credentials.app_key: "PSabcdef…" is not an environment variable name (A-Z, 0-9, _): the registry holds credential names, never their values`},
		},
		{
			name:      "unknown scope value",
			providers: replace("scope: key", "scope: tenant"),
			want:      []string{`registry/providers.yaml:21: providers[1].rate_limits[0].scope: invalid value "tenant" (allowed: service, key, ip, account)`},
		},
		{
			name:      "unknown window without a default",
			providers: replace("requests_per_day: unknown", "requests_per_hour: unknown"),
			want:      []string{`registry/providers.yaml:23: providers[1].rate_limits[0].requests_per_hour: requests_per_hour is unknown, and defaults.unknown_limits declares no requests_per_hour to apply instead`},
		},
		{
			name:      "YAML syntax error",
			providers: replace("    auth: kis_oauth2", "    auth: [kis_oauth2"),
			want:      []string{`registry/providers.yaml:18: invalid YAML: did not find expected ',' or ']'`},
		},
		{
			name:      "dataset names a missing provider",
			providers: baseProviders,
			datasets:  map[string]string{"x.yaml": "id: x\nprovider: fred\n"},
			want:      []string{`registry/datasets/x.yaml:2: provider: dataset "x" names provider "fred", which providers.yaml does not declare (declared: datago, kis)`},
		},
		{
			name:      "duplicate dataset id across files",
			providers: baseProviders,
			datasets:  map[string]string{"a.yaml": tourDataset, "b.yaml": "# again\n" + tourDataset},
			want:      []string{`registry/datasets/b.yaml:2: id: duplicate dataset id "tour" (first declared at registry/datasets/a.yaml:1)`},
		},
		{
			name:      "dataset id with upper case",
			providers: baseProviders,
			datasets:  map[string]string{"a.yaml": strings.Replace(tourDataset, "id: tour", "id: Tour_1", 1)},
			want:      []string{`registry/datasets/a.yaml:1: id: invalid id "Tour_1": use lower-case letters, digits and single hyphens ([a-z0-9-]+, at most 64 characters)`},
		},
		{
			name:      "placeholder typo",
			providers: baseProviders,
			datasets:  map[string]string{"a.yaml": strings.Replace(tourDataset, `"{from}"`, `"{form}"`, 1)},
			want:      []string{`registry/datasets/a.yaml:6: request.params.eventStartDate: unknown placeholder {form} in "{form}" (allowed: {from}, {to}, {until}, optionally with a format: {from:FORMAT})`},
		},
		{
			name:      "bad cron",
			providers: baseProviders,
			datasets:  map[string]string{"a.yaml": strings.Replace(tourDataset, `"0 11 * * *"`, `"0 25 * * *"`, 1)},
			want:      []string{`registry/datasets/a.yaml:10: ingest.schedule: invalid cron schedule "0 25 * * *": end of range (25) above maximum (23): 25 (expected 5 fields: minute hour day-of-month month day-of-week, or @daily, @hourly, @every 6h)`},
		},
		{
			name:      "scope_key on a provider without a service scope",
			providers: baseProviders,
			datasets:  map[string]string{"k.yaml": "id: k\nprovider: kis\nscope_key: abc\n"},
			want:      []string{`registry/datasets/k.yaml:3: scope_key: scope_key "abc" given, but provider kis declares no scope service limit`},
		},
		{
			name:      "probe without a request",
			providers: baseProviders,
			datasets:  map[string]string{"k.yaml": "id: k\nprovider: kis\nprobe: {interval_minutes: 60}\n"},
			want:      []string{`registry/datasets/k.yaml:3: probe.interval_minutes: dataset "k" is probed or ingested but declares no request: add request with what the kis connector needs`},
		},
		{
			name:      "unknown dataset field in a multi-document file",
			providers: baseProviders,
			datasets:  map[string]string{"m.yaml": tourDataset + "---\nid: tour2\nprovider: datago\nscope_key: x\nintervall: 5\n"},
			want:      []string{`registry/datasets/m.yaml:15: (document 2).intervall: unknown field "intervall" (allowed: id, name, provider, scope_key, request, probe, ingest, terms, rows, coverage, maintenance, bounds)`},
		},
		{
			name:      "budget gate: three datasets over one service's daily limit",
			providers: baseProviders,
			datasets: map[string]string{
				"tour.yaml": strings.Replace(tourDataset, "interval_minutes: 60", "interval_minutes: 1", 1),
				"more.yaml": strings.NewReplacer("id: tour", "id: tour-b", "interval_minutes: 60", "interval_minutes: 1").Replace(tourDataset) +
					"---\n" + strings.NewReplacer("id: tour", "id: tour-c", `"0 11 * * *"`, `"*/15 * * * *"`).Replace(tourDataset),
			},
			// probes: 1440 + 1440 + 24 = 2,904, ×2 = 5,808; ingest (1 + 1 +
			// 96 runs) × 10 calls (a 10-day look-back, one day a call) = 980.
			want: []string{`registry/datasets/tour.yaml:8: probe.interval_minutes: scope datago/service/15073861: daily demand 6,788 (probes 2,904 ×2 = 5,808 + ingest 980) exceeds requests_per_day 5,000 (registry/providers.yaml:13); datasets: tour, tour-b, tour-c`},
		},
		{
			name:      "budget gate on an unknown limit uses the conservative default",
			providers: baseProviders,
			datasets:  map[string]string{"k.yaml": "id: k\nprovider: kis\nrequest: {path: /uapi/x, tr_id: T}\nprobe: {interval_minutes: 2}\n"},
			want:      []string{`registry/datasets/k.yaml:4: probe.interval_minutes: scope kis/key: daily demand 1,440 (probes 720 ×2 = 1,440 + ingest 0) exceeds requests_per_day 1,000 — unknown, so the conservative default from defaults.unknown_limits applies (registry/providers.yaml:23); datasets: k`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, tt.providers, tt.datasets)
			var problems Errors
			if !errors.As(err, &problems) {
				t.Fatalf("err = %v, want Errors", err)
			}
			got := strings.Split(problems.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
