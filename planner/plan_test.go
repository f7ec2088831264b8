package planner_test

import (
	"testing"
	"time"

	_ "github.com/sluicehq/sluice/connector/all"
	"github.com/sluicehq/sluice/planner"
	"github.com/sluicehq/sluice/registry"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func defaultRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	reg, err := registry.Default(registry.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func date(s string) time.Time {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return d
}

func TestDefaultBackfillFigures(t *testing.T) {
	reg := defaultRegistry(t)
	p, err := planner.Backfill(reg, planner.Input{From: date("2016-01-01"), To: date("2026-08-31")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("totals %+v", p.Totals)
	for _, s := range p.Scopes {
		t.Logf("%s datasets %d chunks %d calls %d quota %d reserved %d share %d days %d makespan %s stalled %v", s.Scope, len(s.Datasets), s.Chunks, s.Calls, s.DailyQuota, s.Reserved.Total, s.Share, s.ProviderDays, s.Makespan, s.Stalled)
	}
}
