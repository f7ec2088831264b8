package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/notify"
)

func testMaintenance(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.dsn(t), Retention{})
	kis, err := s.AddMaintenance(ctx, notify.Window{Provider: "kis", Start: t0, End: t0.Add(2 * time.Hour), Reason: "upgrade"})
	if err != nil || kis.ID == "" {
		t.Fatalf("add: %+v %v", kis, err)
	}
	old, err := s.AddMaintenance(ctx, notify.Window{Dataset: "fred.gdp", Start: t0.Add(-48 * time.Hour), End: t0.Add(-47 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMaintenance(ctx, notify.Window{Provider: "kis", Start: t0, End: t0}); err == nil {
		t.Fatal("an empty window was recorded")
	}
	all, err := s.Maintenance(ctx, time.Time{})
	if err != nil || len(all) != 2 || all[0].ID != old.ID || all[1].Reason != "upgrade" || !all[1].End.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("all windows: %+v %v", all, err)
	}
	open, err := s.Maintenance(ctx, t0)
	if err != nil || len(open) != 1 || open[0].ID != kis.ID {
		t.Fatalf("windows ending after t0: %+v %v", open, err)
	}
	ended, err := s.EndMaintenance(ctx, kis.ID, t0.Add(30*time.Minute))
	if err != nil || !ended.End.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("end: %+v %v", ended, err)
	}
	// Ending it later never lengthens it.
	if again, err := s.EndMaintenance(ctx, kis.ID, t0.Add(5*time.Hour)); err != nil || !again.End.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("end again: %+v %v", again, err)
	}
	if open, _ := s.Maintenance(ctx, t0.Add(time.Hour)); len(open) != 0 {
		t.Fatalf("an ended window is still open: %+v", open)
	}
	if _, err := s.EndMaintenance(ctx, "999", t0); !errors.Is(err, ErrNoMaintenance) {
		t.Fatalf("unknown id: %v", err)
	}
}
