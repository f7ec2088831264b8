package registry_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/wire"
)

const freshProviders = `providers:
  - id: sixth
    connector: fred
    rate_limits: unknown
`

const freshDataset = "id: s\nprovider: sixth\nrequest: {series_id: X}\nprobe: {interval_minutes: 60}\n"

// TestFreshnessDeclared: a provider's freshness rules are read from its
// registry entry, one a cycle unit.
func TestFreshnessDeclared(t *testing.T) {
	reg, err := load(t, freshProviders+"    freshness:\n      - {cycle: day, lag_hours: 30, weekdays: true, tolerance: 2, note: why}\n      - {cycle: month, lag_days: 45}\n",
		map[string]string{"s.yaml": freshDataset})
	if err != nil {
		t.Fatal(err)
	}
	p := reg.Provider("sixth")
	day, ok := p.FreshnessOf(wire.Day)
	if !ok || day.Defaulted || day.Lag != 30*time.Hour || !day.Weekdays || day.Tolerance != 2 || day.Note != "why" {
		t.Errorf("day rule %+v", day)
	}
	if m, _ := p.FreshnessOf(wire.Month); m.Defaulted || m.Lag != 45*24*time.Hour {
		t.Errorf("month rule %+v", m)
	}
	if q, ok := p.FreshnessOf(wire.Quarter); !ok || !q.Defaulted || q.Lag != 120*24*time.Hour {
		t.Errorf("quarter falls back on the default: %+v", q)
	}
	if _, ok := p.FreshnessOf(wire.Week); ok {
		t.Error("a rule for the week")
	}
	for _, f := range reg.Findings {
		if f.Kind == registry.FindingFreshness {
			t.Errorf("finding with every rule declared: %s", f)
		}
	}
}

// TestFreshnessDefaultIsFlagged: a provider with no freshness rule for
// its probed datasets' cycle gets the conservative default (its late data
// is still judged) and a finding naming the provider, the cycle and the
// dataset: never silently unjudged.
func TestFreshnessDefaultIsFlagged(t *testing.T) {
	reg, err := load(t, freshProviders, map[string]string{"s.yaml": freshDataset})
	if err != nil {
		t.Fatal(err)
	}
	f, ok := reg.Provider("sixth").FreshnessOf(wire.Day)
	if !ok || !f.Defaulted || f.Lag != 24*time.Hour || !f.Weekdays || f.Tolerance != 3 {
		t.Errorf("default day rule %+v", f)
	}
	var got []string
	for _, fd := range reg.Findings {
		if fd.Kind == registry.FindingFreshness {
			got = append(got, fd.String())
		}
	}
	want := "registry/providers.yaml:2: [freshness] sixth: freshness: no rule for cycle day (probed: s): the default applies (lag 1 day, weekdays, tolerance 3); declare `- {cycle: day, lag_days: N}` under freshness"
	if len(got) != 1 || got[0] != want {
		t.Errorf("findings %q\nwant %s", got, want)
	}
}

// TestFreshnessWeekIsFlagged: a probed weekly chart, whose lateness no
// rule judges, is reported rather than silently unjudged.
func TestFreshnessWeekIsFlagged(t *testing.T) {
	reg, err := load(t, "providers:\n  - id: kis\n    rate_limits: unknown\n    freshness: [{cycle: day, lag_days: 1}]\n",
		map[string]string{"k.yaml": "id: k\nprovider: kis\nrequest:\n  path: /uapi/x\n  tr_id: FHKUP03500100\n  params: {FID_PERIOD_DIV_CODE: W}\nprobe: {interval_minutes: 60}\n"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range reg.Findings {
		if f.Kind == registry.FindingFreshness {
			got = append(got, f.String())
		}
	}
	want := "registry/providers.yaml:2: [freshness] kis: freshness: the lateness of week periods is not judged (probed: k): their late data is never flagged"
	if len(got) != 1 || got[0] != want {
		t.Errorf("findings %q\nwant %s", got, want)
	}
}

// TestFreshnessProblems: a bad rule names file, line, field and value.
func TestFreshnessProblems(t *testing.T) {
	for _, tc := range []struct{ rule, want string }{
		{"{cycle: week, lag_days: 7}", `registry/providers.yaml:6: providers[0].freshness[0].cycle: invalid value "week" (allowed: day, half_month, month, quarter, half_year, year)`},
		{"{cycle: day}", `registry/providers.yaml:6: providers[0].freshness[0]: missing field "lag_days" or "lag_hours": how long after a period ends it is in the answer`},
		{"{lag_days: 1}", `registry/providers.yaml:6: providers[0].freshness[0]: missing field "cycle" (one of: day, half_month, month, quarter, half_year, year)`},
		{"{cycle: day, lag_days: 1, lag_hours: 2}", `registry/providers.yaml:6: providers[0].freshness[0]: both lag_days and lag_hours given: declare the publication lag once`},
		{"{cycle: month, lag_days: 30, weekdays: true}", `registry/providers.yaml:6: providers[0].freshness[0].weekdays: weekdays applies to the day cycle only, not month`},
		{"{cycle: day, lag_days: 0}", `registry/providers.yaml:6: providers[0].freshness[0].lag_days: expected a number of days greater than 0 and at most 731, got "0"`},
		{"{cycle: day, lag_hours: 1, tolerance: 99}", `registry/providers.yaml:6: providers[0].freshness[0].tolerance: value 99 out of range (0 to 31)`},
		{"{cycle: day, lag_hours: 1, lagg: 2}", `registry/providers.yaml:6: providers[0].freshness[0].lagg: unknown field "lagg" (allowed: cycle, lag_days, lag_hours, weekdays, tolerance, note)`},
	} {
		_, err := load(t, freshProviders+"    freshness:\n      - "+tc.rule+"\n", map[string]string{"s.yaml": freshDataset})
		var problems registry.Errors
		if !errors.As(err, &problems) || problems.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.rule, err, tc.want)
		}
	}
}

// TestNotice: a provider's notice is read from its registry entry; text
// is required.
func TestNotice(t *testing.T) {
	reg, err := load(t, freshProviders+"    notice: {lang: en, text: Shown everywhere., link: \"https://sixth.example/terms\"}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	n := reg.Provider("sixth").Notice
	if n == nil || n.Text != "Shown everywhere." || n.Lang != "en" || n.Link != "https://sixth.example/terms" || n.LinkText != n.Link {
		t.Errorf("notice %+v", n)
	}
	_, err = load(t, freshProviders+"    notice: {lang: en}\n", nil)
	if err == nil || !strings.Contains(err.Error(), `registry/providers.yaml:5: providers[0].notice: missing field "text"`) {
		t.Errorf("notice without text: %v", err)
	}
}

// TestDefaultRegistryDeclaresFreshness: every provider of the default
// registry declares the freshness of every cycle its probed datasets use:
// none is judged by the default.
func TestDefaultRegistryDeclaresFreshness(t *testing.T) {
	reg, err := registry.Default(testOpts())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range reg.Findings {
		if f.Kind == registry.FindingFreshness {
			t.Error(f)
		}
	}
	for _, ds := range reg.Datasets {
		if ds.Probe == nil {
			continue
		}
		if f, ok := reg.Provider(ds.Provider).FreshnessOf(ds.Wire.Cycle.Unit); !ok || f.Defaulted {
			t.Errorf("%s: cycle %s judged by the default (%v)", ds.ID, ds.Wire.Cycle.Unit, ok)
		}
	}
}
