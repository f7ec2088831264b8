package status

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/watch"
)

// keysOf returns the sorted keys of a JSON object.
func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// decodeStrict decodes b into v refusing unknown fields.
func decodeStrict(t *testing.T, what string, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestStatuspageAPI: /api/v2/summary.json and /api/v2/status.json have
// Statuspage's shapes. The fixture testdata/statuspage/summary.json
// follows a real Statuspage answer field for field — the public
// https://illposed.statuspage.io/api/v2/summary.json of 2021-10-28 as
// recorded in a public repository's test data, with a component group
// as Statuspage's component-group API documents it (a "components" list
// of ids) and the required fields of MongoDB's documentation of
// https://status.mongodb.com/api/v2/summary.json — with values of our
// own. Ours decodes into the same structs with no unknown field, and
// every object carries exactly the fixture's keys.
func TestStatuspageAPI(t *testing.T) {
	fixture, err := os.ReadFile("testdata/statuspage/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	var real StatuspageSummaryDoc
	decodeStrict(t, "the recorded summary", fixture, &real)
	if len(real.Components) != 3 || len(real.ScheduledMaintenances) != 1 {
		t.Fatalf("the recorded summary decodes to %+v", real)
	}

	f := newFixture(t, nil)
	f.observe(t, "fred-dgs10", testNow.Add(-3*time.Hour), testNow.Add(-2*time.Hour), 20*time.Minute, watch.OK, 200)
	f.observe(t, "fred-dgs10", testNow.Add(-2*time.Hour+time.Minute), testNow.Add(-time.Hour), 10*time.Minute, watch.ProviderError, 503)
	f.observe(t, "ecos-722y001-0101000", testNow.Add(-3*time.Hour), testNow.Add(-time.Hour), 30*time.Minute, watch.OK, 200)

	r := f.get(t, "/api/v2/summary.json")
	if r.code != 200 || r.header.Get("Content-Type") != "application/json; charset=utf-8" || r.header.Get("Cache-Control") != "no-cache" ||
		r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET /api/v2/summary.json: %d %v", r.code, r.header)
	}
	var ours StatuspageSummaryDoc
	decodeStrict(t, "our summary", []byte(r.body), &ours)

	type shape struct {
		Page       json.RawMessage   `json:"page"`
		Status     json.RawMessage   `json:"status"`
		Components []json.RawMessage `json:"components"`
	}
	var rs, os_ shape
	_ = json.Unmarshal(fixture, &rs)
	_ = json.Unmarshal([]byte(r.body), &os_)
	if a, b := keysOf(t, []byte(r.body)), keysOf(t, fixture); !slices.Equal(a, b) {
		t.Errorf("summary keys %v, Statuspage's %v", a, b)
	}
	if a, b := keysOf(t, os_.Page), keysOf(t, rs.Page); !slices.Equal(a, b) {
		t.Errorf("page keys %v, Statuspage's %v", a, b)
	}
	if a, b := keysOf(t, os_.Status), keysOf(t, rs.Status); !slices.Equal(a, b) {
		t.Errorf("status keys %v, Statuspage's %v", a, b)
	}
	groupKeys, componentKeys := keysOf(t, rs.Components[0]), keysOf(t, rs.Components[1])
	for i, c := range os_.Components {
		want := componentKeys
		if ours.Components[i].Group {
			want = groupKeys
		}
		if got := keysOf(t, c); !slices.Equal(got, want) {
			t.Errorf("component %s keys %v, Statuspage's %v", ours.Components[i].ID, got, want)
		}
	}

	if ours.Status.Indicator != "critical" && ours.Status.Indicator != "major" {
		t.Errorf("status %+v with fred-dgs10 down", ours.Status)
	}
	if ours.Page.ID == "" || ours.Page.Name != "Sluice status" || ours.Page.URL != "/" || ours.Page.TimeZone != "UTC" || !ours.Page.UpdatedAt.Equal(testNow) {
		t.Errorf("page %+v", ours.Page)
	}
	statuses := map[string]bool{"operational": true, "degraded_performance": true, "partial_outage": true, "major_outage": true, "under_maintenance": true}
	byID := map[string]StatuspageComponent{}
	for _, c := range ours.Components {
		byID[c.ID] = c
		if !statuses[c.Status] || c.PageID != ours.Page.ID || c.CreatedAt.IsZero() || c.UpdatedAt.IsZero() || c.Position < 1 {
			t.Errorf("component %+v", c)
		}
	}
	// Two datasets' states are known: two groups of one component each.
	// The datasets whose state is not known are left out, not reported
	// operational.
	if len(ours.Components) != 4 {
		t.Errorf("%d components, want 2 groups and 2 datasets: %+v", len(ours.Components), ours.Components)
	}
	fred, dgs10 := byID["fred"], byID["fred-dgs10"]
	if !fred.Group || fred.Status != "major_outage" || !slices.Equal(fred.Components, []string{"fred-dgs10"}) || fred.GroupID != nil {
		t.Errorf("group fred: %+v", fred)
	}
	if dgs10.Group || dgs10.Status != "major_outage" || dgs10.GroupID == nil || *dgs10.GroupID != "fred" || dgs10.Description == nil {
		t.Errorf("component fred-dgs10: %+v", dgs10)
	}
	if c := byID["ecos-722y001-0101000"]; c.Status != "operational" || c.Name != f.reg.Dataset("ecos-722y001-0101000").Name {
		t.Errorf("component ecos-722y001-0101000: %+v", c)
	}
	if ours.Incidents == nil || ours.ScheduledMaintenances == nil || len(ours.Incidents)+len(ours.ScheduledMaintenances) != 0 {
		t.Errorf("incidents %v, maintenances %v", ours.Incidents, ours.ScheduledMaintenances)
	}
	if strings.Contains(r.body, "secret-internal-detail") {
		t.Error("the summary shows a probe's message")
	}

	st := f.get(t, "/api/v2/status.json")
	var sd StatuspageStatusDoc
	decodeStrict(t, "our status", []byte(st.body), &sd)
	if a := keysOf(t, []byte(st.body)); !slices.Equal(a, []string{"page", "status"}) {
		t.Errorf("status.json keys %v", a)
	}
	if sd.Status != ours.Status || sd.Page != ours.Page {
		t.Errorf("status.json %+v, summary %+v %+v", sd, ours.Page, ours.Status)
	}
	var cd StatuspageComponentsDoc
	decodeStrict(t, "our components", []byte(f.get(t, "/api/v2/components.json").body), &cd)
	if len(cd.Components) != len(ours.Components) {
		t.Errorf("components.json: %d components", len(cd.Components))
	}
}

// TestStatuspageIndicator: Statuspage's indicator is one of its four
// words; no known state is "none", not Sluice's own "unknown".
func TestStatuspageIndicator(t *testing.T) {
	for _, c := range []struct {
		counts map[watch.State]int
		want   string
	}{
		{map[watch.State]int{watch.Unknown: 5}, "none"},
		{map[watch.State]int{watch.Up: 5}, "none"},
		{map[watch.State]int{watch.Up: 4, watch.Degraded: 1}, "minor"},
		{map[watch.State]int{watch.Up: 4, watch.Down: 1}, "major"},
		{map[watch.State]int{watch.Up: 1, watch.Down: 1, watch.Unknown: 9}, "critical"},
	} {
		total := 0
		for _, n := range c.counts {
			total += n
		}
		ind, desc := indicator(c.counts, total)
		if got := statuspageIndicator(summaryView{Indicator: ind, Description: desc, Counts: c.counts}); got.Indicator != c.want || got.Description == "" {
			t.Errorf("%v: %+v, want %s", c.counts, got, c.want)
		}
	}
}
