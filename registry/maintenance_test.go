package registry

import (
	"strings"
	"testing"
	"time"
)

func TestLoadMaintenanceWindows(t *testing.T) {
	providers := strings.Replace(baseProviders, "  - id: kis\n", "  - id: kis\n    maintenance:\n      - {start: \"2026-12-08T01:00:00+09:00\", end: \"2026-12-08T03:00:00+09:00\", reason: KIS system upgrade}\n", 1)
	ds := tourDataset + "maintenance:\n  - {start: \"2026-12-09T00:00:00Z\", end: \"2026-12-09T01:00:00Z\"}\n"
	reg, err := load(t, providers, map[string]string{"tour.yaml": ds})
	if err != nil {
		t.Fatal(err)
	}
	kis := reg.Provider("kis").Maintenance
	if len(kis) != 1 || !kis[0].Start.Equal(time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)) || kis[0].Reason != "KIS system upgrade" {
		t.Fatalf("kis maintenance = %+v", kis)
	}
	if got := reg.Dataset("tour").Maintenance; len(got) != 1 || got[0].End.Sub(got[0].Start) != time.Hour {
		t.Fatalf("tour maintenance = %+v", got)
	}
}

func TestLoadMaintenanceProblemsNameFileFieldAndValue(t *testing.T) {
	for _, tc := range []struct{ window, want string }{
		{`{start: "2026-12-09T02:00:00Z", end: "2026-12-09T01:00:00Z"}`, `registry/datasets/tour.yaml:12: maintenance[0].end: end 2026-12-09T01:00:00Z is not after start 2026-12-09T02:00:00Z`},
		{`{start: "tomorrow", end: "2026-12-09T01:00:00Z"}`, `registry/datasets/tour.yaml:12: maintenance[0].start: invalid time "tomorrow"`},
		{`{start: "2026-12-09T01:00:00Z"}`, `registry/datasets/tour.yaml:12: maintenance[0]: missing field "end"`},
		{`{start: "2026-12-09T01:00:00Z", end: "2026-12-09T02:00:00Z", why: x}`, `maintenance[0].why: unknown field "why"`},
	} {
		_, err := load(t, baseProviders, map[string]string{"tour.yaml": tourDataset + "maintenance:\n  - " + tc.window + "\n"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.window, err, tc.want)
		}
	}
}
