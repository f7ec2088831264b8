package registry

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func TestRunsPerDay(t *testing.T) {
	for spec, want := range map[string]int{
		"0 7 * * *":      1,
		"*/15 * * * *":   96,
		"0 9-17 * * 1-5": 9,
		"30 18 * * 1-5":  1,
		"@hourly":        24,
		"@daily":         1,
		"@every 6h":      4,
		"@every 7h":      4,
		"0,30 0 * * *":   2,
		"* * * * *":      1440,
	} {
		s, err := cron.ParseStandard(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		got, ok := runsPerDay(s)
		if !ok || got != want {
			t.Errorf("runsPerDay(%q) = %d, %v; want %d", spec, got, ok, want)
		}
	}
	s, _ := cron.ParseStandard("@every 30s")
	if _, ok := runsPerDay(s); ok {
		t.Error("@every 30s accepted")
	}
}

func TestExpand(t *testing.T) {
	from := time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)
	to := time.Date(2025, 1, 31, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{
		"{from}":                    "20250102",
		"{to:YYYY-MM-DD}":           "2025-01-31",
		"x{from:YYYYMM}y{to:YYYY}z": "x202501y2025z",
		"plain":                     "plain",
		"{until}":                   "20250201", // the day after to: a month end rolls over
		"{until:YYYY-MM-DD}":        "2025-02-01",
	} {
		got, err := Expand(in, from, to)
		if err != nil || got != want {
			t.Errorf("Expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	// {until} rolls over year ends and leap days.
	for to, want := range map[string]string{"2024-02-28": "20240229", "2024-02-29": "20240301", "2023-02-28": "20230301", "2025-12-31": "20260101"} {
		d, _ := time.Parse(time.DateOnly, to)
		if got, err := Expand("{until}", d, d); err != nil || got != want {
			t.Errorf("Expand({until}) for %s = %q, %v; want %s", to, got, err, want)
		}
	}
	for _, bad := range []string{"{from", "from}", "{date}", "{from:DD}", "}{", "{until:DD}", "{untill}"} {
		if _, err := Expand(bad, from, to); err == nil {
			t.Errorf("Expand(%q) accepted", bad)
		}
	}
}

func TestTermsMerge(t *testing.T) {
	base := Terms{Type: "KOGL-1", CommercialUse: TriTrue, Redistribution: "allowed", Attribution: "a", PIIColumns: []string{"x"}, PIIColumnsSet: true}
	got := base.Merge(Terms{CommercialUse: TriFalse, PIIColumnsSet: true})
	if got.CommercialUse != TriFalse || got.Redistribution != "allowed" || got.Type != "KOGL-1" || len(got.PIIColumns) != 0 {
		t.Errorf("merge = %+v", got)
	}
}

// TestEveryProblemAtOnce checks that loading reports all problems of all
// files in one pass, sorted by file and line.
func TestEveryProblemAtOnce(t *testing.T) {
	providers := strings.Replace(baseProviders, "requests_per_second: 5", "requests_per_second: -1", 1)
	_, err := load(t, providers, map[string]string{
		"a.yaml": "id: a\nprovider: nope\n",
		"b.yaml": "id: b\nprovider: kis\nprobe: {interval_minutes: 0}\n",
	})
	var problems Errors
	if !errors.As(err, &problems) {
		t.Fatalf("err = %v", err)
	}
	want := []string{
		`registry/datasets/a.yaml:2: provider: dataset "a" names provider "nope", which providers.yaml does not declare (declared: datago, kis)`,
		`registry/datasets/b.yaml:3: probe.interval_minutes: value 0 out of range (1 to 10080)`,
		`registry/providers.yaml:22: providers[1].rate_limits[0].requests_per_second: must be positive, got -1 (a limit of zero allows no call at all; write unknown if the number is not known)`,
	}
	if got := problems.Error(); got != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

func TestStaleSource(t *testing.T) {
	providers := strings.Replace(baseProviders, "verified_at: 2026-11-01}\n    terms_source", "verified_at: 2026-01-15}\n    terms_source", 1)
	reg, err := load(t, providers, nil)
	if err != nil {
		t.Fatal(err)
	}
	var stale []string
	for _, f := range reg.Findings {
		if f.Kind == FindingStale {
			stale = append(stale, f.String())
		}
	}
	want := "registry/providers.yaml:24: [stale] kis/key: verified_at 2026-01-15 is 319 days old (stale after 180 days): re-read https://apiportal.koreainvestment.com/intro"
	if len(stale) != 1 || stale[0] != want {
		t.Errorf("stale findings = %q, want [%q]", stale, want)
	}
}

func TestLoadDirErrors(t *testing.T) {
	if _, err := LoadDir("testdata/does-not-exist", testOpts()); err == nil || !strings.Contains(err.Error(), "does-not-exist") {
		t.Errorf("missing dir: %v", err)
	}
	if _, err := LoadDir("testdata/small/providers.yaml", testOpts()); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("file as dir: %v", err)
	}
}

// TestFutureDateIsAFinding: a verified_at after today is reported, not
// refused, so that a machine whose clock is behind still loads the
// registry.
func TestFutureDateIsAFinding(t *testing.T) {
	providers := strings.Replace(baseProviders, "verified_at: 2026-11-01}\n    terms_source", "verified_at: 2027-01-01}\n    terms_source", 1)
	reg, err := load(t, providers, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "registry/providers.yaml:24: [future] providers[1].rate_limits[0].source.verified_at: date 2027-01-01 is in the future (today is 2026-11-30): check it, or this machine's clock"
	for _, f := range reg.Findings {
		if f.Kind == FindingFuture {
			if f.String() != want {
				t.Errorf("finding %q, want %q", f, want)
			}
			return
		}
	}
	t.Errorf("no future-date finding in %v", reg.Findings)
}

// TestUndeclaredTermsAreReported: terms a provider leaves out need
// checking as much as those written unknown.
func TestUndeclaredTermsAreReported(t *testing.T) {
	reg, err := load(t, baseProviders, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "registry/providers.yaml:8: [no-terms] datago: terms not declared: type, commercial_use, attribution_required, redistribution, modification_allowed"
	for _, f := range reg.Findings {
		if f.String() == want {
			return
		}
	}
	t.Errorf("missing finding %q in %v", want, reg.Findings)
}

// TestInvalidWindowsAreNotAlsoMissing: an entry whose every value is
// invalid reports each value, not also "declares no limit".
func TestInvalidWindowsAreNotAlsoMissing(t *testing.T) {
	providers := strings.Replace(baseProviders, "requests_per_second: 5\n        requests_per_day: unknown", "requests_per_second: two\n        requests_per_minute: -5", 1)
	_, err := load(t, providers, nil)
	if err == nil || strings.Contains(err.Error(), "declares no limit") || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("problems:\n%v", err)
	}
}
