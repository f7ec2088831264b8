package registry

import (
	"path/filepath"
	"testing"
)

// TestADR0007Example loads the minimal example registry (testdata/adr0007,
// docs/registry.md "The registry's rules" 2) exactly as written and
// checks that the dataset's terms override wins field by field.
func TestADR0007Example(t *testing.T) {
	reg, err := LoadDir(filepath.Join("testdata", "adr0007"), testOpts())
	if err != nil {
		t.Fatalf("the minimal example must load: %v", err)
	}
	p := reg.Provider("datago")
	if p == nil {
		t.Fatal("provider datago missing")
	}
	rl := p.RateLimits[0]
	if w, ok := rl.Window(24 * 60 * 60 * 1e9); rl.Scope != ScopeService || !ok || w.Count != 5000 || rl.MinInterval.Seconds() != 2 {
		t.Errorf("rate limit = %+v", rl)
	}
	ds := reg.Dataset("visitkorea-tourism")
	if ds == nil {
		t.Fatal("dataset visitkorea-tourism missing")
	}
	if ds.Terms.Redistribution != "non_commercial" {
		t.Errorf("override lost: redistribution = %q, want non_commercial", ds.Terms.Redistribution)
	}
	if ds.Terms.AttributionRequired != TriTrue || ds.Terms.Attribution != "출처 표시 텍스트" {
		t.Errorf("provider terms not inherited: %+v", ds.Terms)
	}
	if p.Terms.Redistribution != "allowed" {
		t.Errorf("provider terms changed by the override: %q", p.Terms.Redistribution)
	}
	// The example declares no scope_key: the dataset is counted in the
	// shared, conservative budget and reported.
	if ds.ScopeKey != UnassignedScopeKey || reg.Scope("datago/service/unassigned") == nil {
		t.Errorf("scope key = %q", ds.ScopeKey)
	}
	kinds := map[string]int{}
	for _, f := range reg.Findings {
		kinds[f.Kind]++
	}
	if kinds[FindingUnsourced] != 1 || kinds[FindingTimezone] != 1 {
		t.Errorf("findings = %v, want the unsourced limit and the assumed timezone reported", reg.Findings)
	}
}
