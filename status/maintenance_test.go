package status

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/notify"
	"github.com/sluicehq/sluice/registry"
)

// TestSummaryShowsMaintenance: the public page lists the maintenance
// windows open or to come, with their reasons, and not the ended ones.
func TestSummaryShowsMaintenance(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	for _, w := range []notify.Window{
		{Provider: "kis", Start: testNow.Add(-time.Hour), End: testNow.Add(time.Hour), Reason: "KIS system upgrade"},
		{Dataset: "fred-dgs10", Provider: "fred", Start: testNow.Add(24 * time.Hour), End: testNow.Add(26 * time.Hour), Reason: "FRED release day"},
		{Provider: "ecos", Start: testNow.Add(-3 * time.Hour), End: testNow.Add(-2 * time.Hour), Reason: "over already"},
	} {
		if _, err := f.store.AddMaintenance(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	f.reg.Provider("upbit").Maintenance = []registry.Maintenance{{Start: testNow.Add(-time.Minute), End: testNow.Add(time.Minute), Reason: "declared in the registry"}}
	r := f.get(t, "/")
	if r.code != 200 {
		t.Fatalf("GET /: %d\n%s", r.code, r.body)
	}
	i := strings.Index(r.body, `<section class="maintenance"`)
	if i < 0 {
		t.Fatalf("no maintenance section:\n%s", r.body)
	}
	sec := r.body[i:]
	sec = sec[:strings.Index(sec, "</section>")]
	for _, want := range []string{"<b>In maintenance</b>", "KIS system upgrade", "Planned", "fred-dgs10", "FRED release day", "declared in the registry"} {
		if !strings.Contains(sec, want) {
			t.Errorf("maintenance section lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(r.body, "over already") {
		t.Error("an ended window is shown")
	}
}
