package status

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/watch"
)

// TestUptimeCoverage: a dataset watched for two minutes does not show a
// bare 100.00% for 30 and 90 days. The summary page, the dataset page and
// the JSON say how much of each window was observed.
func TestUptimeCoverage(t *testing.T) {
	f := newFixture(t, nil)
	const id = "fred-dgs10"
	f.observe(t, id, testNow.Add(-2*time.Minute), testNow, time.Minute, watch.OK, 200)

	row := rowOf(t, f.get(t, "/").body, id)
	if strings.Contains(row, `<td class="num">100.00%</td>`) {
		t.Errorf("the summary row shows a bare 100.00%%:\n%s", row)
	}
	for _, w := range []string{"24 h", "7 d", "30 d", "90 d"} {
		if want := "2min observed of " + w; !strings.Contains(row, want) {
			t.Errorf("the summary row does not say %q:\n%s", want, row)
		}
	}

	page := f.get(t, "/datasets/"+id).body
	i := strings.Index(page, `<table class="windows">`)
	if i < 0 {
		t.Fatal("the dataset page has no windows table")
	}
	windows := page[i : i+strings.Index(page[i:], "</table>")]
	if !strings.Contains(windows, "2min observed of 90 d (&lt;0.1%)") {
		t.Errorf("the dataset page's windows do not say what was observed:\n%s", windows)
	}

	var doc SummaryDoc
	if err := json.Unmarshal([]byte(f.get(t, "/api/v1/summary.json").body), &doc); err != nil {
		t.Fatal(err)
	}
	var c *ComponentDoc
	for i := range doc.Components {
		if doc.Components[i].ID == id {
			c = &doc.Components[i]
		}
	}
	if c == nil || len(c.Uptime) != 4 {
		t.Fatalf("no component %s with four windows: %+v", id, c)
	}
	for _, w := range c.Uptime {
		if w.Ratio == nil || *w.Ratio != 1 || w.ObservedSeconds != 120 || !w.Partial ||
			w.Coverage != 120/w.WindowSeconds || !strings.HasPrefix(w.Uptime, "100.00% over 2min observed of ") {
			t.Errorf("window %s: %+v", w.Label, w)
		}
	}
	// A window observed whole shows its figure alone.
	full := windowOf(watch.WindowUptime{Window: 24 * time.Hour, Availability: watch.Availability{Up: 24 * time.Hour}})
	if full.Uptime != "100.00%" || full.Partial || full.Coverage != 1 {
		t.Errorf("a day observed whole: %+v", full)
	}
	none := windowOf(watch.WindowUptime{Window: 24 * time.Hour, Availability: watch.Availability{Unknown: 24 * time.Hour}})
	if none.Uptime != "no data" || none.Ratio != nil || none.Observed != "nothing observed of 24 h" {
		t.Errorf("a day not observed: %+v", none)
	}
}
