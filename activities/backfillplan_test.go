package activities

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
)

// TestPlanBackfillStartsTheLongestScopesFirst: the default registry's
// backfill lists its datasets in start order — one dataset of each scope
// in turn, the scope the planner predicts to take longest first (kis/key:
// 6,400 calls at 5 a second), every dataset once. In plan order the first 32 datasets, the ones the
// Backfill workflow starts at once, were datago's 3 and 29 of ECOS's 80,
// and kis/key, the critical path, had none.
func TestPlanBackfillStartsTheLongestScopesFirst(t *testing.T) {
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lake, err := sink.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Registry: reg, Sink: lake, Gate: testGate(t, 0), RateScale: 10})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.PlanBackfill(context.Background(), PlanBackfillInput{From: "2016-01-01", To: "2026-08-31"})
	if err != nil {
		t.Fatal(err)
	}
	scopeOf := func(d BackfillDataset) string {
		ids := reg.ScopesFor(d.Dataset)
		if len(ids) != 1 {
			t.Fatalf("dataset %s counts against %d scopes; this test expects one each", d.Dataset, len(ids))
		}
		return ids[0].ID
	}
	var first []string
	distinct := map[string]bool{}
	for _, d := range res.Datasets[:5] {
		first = append(first, scopeOf(d))
		distinct[scopeOf(d)] = true
	}
	if first[0] != "kis/key" || len(distinct) != 5 {
		t.Fatalf("the first five datasets count against %v, want one of each of the five scopes, kis/key (the longest) first", first)
	}
	per := map[string]int{}
	for _, d := range res.Datasets[:32] {
		per[scopeOf(d)]++
	}
	if per["kis/key"] < 8 {
		t.Errorf("the first 32 datasets started hold %d of kis/key (%v), want at least 8", per["kis/key"], per)
	}
	seen := map[string]bool{}
	for _, d := range res.Datasets {
		if seen[d.Dataset] {
			t.Errorf("dataset %s listed twice", d.Dataset)
		}
		seen[d.Dataset] = true
	}
	if len(seen) != 192 {
		t.Errorf("%d datasets, want the default registry's 192", len(seen))
	}
}
