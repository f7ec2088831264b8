package registry

import "testing"

// TestDefaultRegistry checks the registry built into the binary: the seed's
// 189 endpoints plus the data.go.kr datasets, passing its own budget gate.
func TestDefaultRegistry(t *testing.T) {
	reg, err := Default(testOpts())
	if err != nil {
		t.Fatalf("the default registry must pass its own gate:\n%v", err)
	}
	count := map[string]int{}
	for _, d := range reg.Datasets {
		count[d.Provider]++
	}
	want := map[string]int{"kis": 100, "ecos": 80, "fred": 4, "upbit": 5}
	for p, n := range want {
		if count[p] != n {
			t.Errorf("%s datasets = %d, want %d", p, count[p], n)
		}
	}
	if count["datago"] < 4 {
		t.Errorf("datago datasets = %d, want at least 4", count["datago"])
	}
	// At least three data.go.kr datasets share one 활용신청 scope.
	shared := 0
	for _, s := range reg.Scopes {
		if s.Provider.ID == "datago" && len(s.Datasets) > shared {
			shared = len(s.Datasets)
		}
	}
	if shared < 3 {
		t.Errorf("largest data.go.kr service scope holds %d datasets, want ≥ 3", shared)
	}
	for _, id := range []string{"fred-dgs2", "fred-dgs5", "fred-dgs10", "fred-dgs30"} {
		if reg.Dataset(id) == nil {
			t.Errorf("dataset %s missing", id)
		}
	}
	// Real identifiers from the seed: KOSPI 0001 with FHKUP03500100, ECOS
	// 722Y001, UPBIT KRW-BTC.
	found := map[string]bool{}
	for _, d := range reg.Datasets {
		r := d.Request
		if v, _ := r.Param("FID_INPUT_ISCD"); v == "0001" && r.TrID == "FHKUP03500100" {
			found["kospi"] = true
		}
		if r.StatCode == "722Y001" {
			found["ecos"] = true
		}
		if r.Market == "KRW-BTC" {
			found["upbit"] = true
		}
	}
	for _, k := range []string{"kospi", "ecos", "upbit"} {
		if !found[k] {
			t.Errorf("no %s dataset with the seed's identifier", k)
		}
	}
}
