package activities

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
)

// revisionStack is the Revisions activity over a local lake the test
// writes objects into directly, and an SQLite watch store.
type revisionStack struct {
	acts  *Activities
	lake  sink.Sink
	store store.Store
}

func newRevisionStack(t *testing.T) *revisionStack {
	t.Helper()
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lake, err := sink.NewLocal(filepath.Join(dir, "lake"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &revisionStack{acts: &Activities{cfg: Config{Registry: reg, Sink: lake, Watch: st}, log: log}, lake: lake, store: st}
}

// put writes the object of a dataset's range as given pages, fetched at
// fetched, and returns its key.
func (s *revisionStack) put(t *testing.T, provider, dataset, from, to string, fetched time.Time, pages ...string) string {
	t.Helper()
	spec := sink.KeySpec{Provider: provider, Dataset: dataset, From: date(from), Ext: "json"}
	if to != "" {
		spec.To = date(to)
	}
	key, err := sink.Key(spec)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.lake.Create(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if _, err := w.WritePage(strings.NewReader(p)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit(sink.Meta{ContentType: "application/json", FetchedAt: fetched}); err != nil {
		t.Fatal(err)
	}
	return key
}

// fredBody is a FRED observations answer of the given date=value pairs.
func fredBody(obs ...string) string {
	var b strings.Builder
	b.WriteString(`{"realtime_start":"2026-11-28","count":` + fmt.Sprint(len(obs)) + `,"observations":[`)
	for i, o := range obs {
		d, v, _ := strings.Cut(o, "=")
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"realtime_start":"2026-11-28","realtime_end":"2026-11-28","date":"%s","value":"%s"}`, d, v)
	}
	b.WriteString(`]}`)
	return b.String()
}

// TestRevisionsOfOverlappingObjects: two daily runs with a look-back
// window, one logical day apart, hold five days in common; one value was
// revised and one missing value filled in. Both are recorded, once, even
// when the comparison runs again.
func TestRevisionsOfOverlappingObjects(t *testing.T) {
	s := newRevisionStack(t)
	ctx := context.Background()
	t1 := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	s.put(t, "fred", "fred-dgs10", "2026-11-20", "2026-11-26", t1,
		fredBody("2026-11-20=4.10", "2026-11-23=4.12", "2026-11-24=4.15", "2026-11-25=4.11", "2026-11-26=."))
	// Today's object comes in two pages (the provider paged it).
	key := s.put(t, "fred", "fred-dgs10", "2026-11-21", "2026-11-27", t1.Add(24*time.Hour),
		fredBody("2026-11-23=4.12", "2026-11-24=4.150"),
		fredBody("2026-11-25=4.09", "2026-11-26=4.20", "2026-11-27=4.18"))

	res, err := s.acts.Revisions(ctx, RevisionsInput{Dataset: "fred-dgs10", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if res.Earlier != "provider=fred/job=fred-dgs10/year=2026/fred-dgs10_20261120-20261126.json.zst" || res.Common != 4 || res.Revisions != 2 || res.Skipped != "" {
		t.Fatalf("result %+v", res)
	}
	changes, err := s.store.Changes(ctx, store.ChangeFilter{Datasets: []string{"fred-dgs10"}, Kinds: []watch.ChangeKind{watch.ChangeRevision}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range changes {
		got[c.Period] = c.From + " → " + c.To
	}
	if len(changes) != 2 || got["2026-11-25"] != "4.11 → 4.09" || got["2026-11-26"] != ". → 4.20" {
		t.Errorf("changes %v", got)
	}

	// The same comparison again (a retried activity) records nothing new.
	again, err := s.acts.Revisions(ctx, RevisionsInput{Dataset: "fred-dgs10", Key: key})
	if err != nil || again.Revisions != 0 {
		t.Errorf("again: %+v, %v", again, err)
	}
	if all, _ := s.store.Changes(ctx, store.ChangeFilter{Datasets: []string{"fred-dgs10"}}); len(all) != 2 {
		t.Errorf("%d changes after the second comparison, want 2", len(all))
	}
}

// TestRevisionsFindsTheEarlierObject: a weekend without objects is
// bridged; a single-day object is compared with the previous single day;
// nothing older than the look-back, nor an earlier object fetched later,
// is compared.
func TestRevisionsFindsTheEarlierObject(t *testing.T) {
	s := newRevisionStack(t)
	ctx := context.Background()
	fri := time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)
	s.put(t, "fred", "fred-dgs2", "2026-11-27", "", fri, fredBody("2026-11-26=3.90", "2026-11-27=3.95"))
	mon := s.put(t, "fred", "fred-dgs2", "2026-11-30", "", fri.Add(72*time.Hour), fredBody("2026-11-27=3.97", "2026-11-30=3.99"))
	res, err := s.acts.Revisions(ctx, RevisionsInput{Dataset: "fred-dgs2", Key: mon})
	if err != nil || res.Earlier != "provider=fred/job=fred-dgs2/year=2026/fred-dgs2_20261127.json.zst" || res.Common != 1 || res.Revisions != 1 {
		t.Fatalf("over the weekend: %+v, %v", res, err)
	}

	// Eight days after the last object: nothing to compare with.
	late := s.put(t, "fred", "fred-dgs2", "2026-12-08", "", fri.Add(11*24*time.Hour), fredBody("2026-12-08=4.00"))
	if res, err := s.acts.Revisions(ctx, RevisionsInput{Dataset: "fred-dgs2", Key: late}); err != nil || res.Earlier != "" || res.Skipped == "" {
		t.Errorf("beyond the look-back: %+v, %v", res, err)
	}

	// An earlier day re-fetched after the later one (a backfill) is not
	// read as the older knowledge.
	s.put(t, "fred", "fred-dgs5", "2026-11-26", "", fri.Add(time.Hour), fredBody("2026-11-26=3.0"))
	newer := s.put(t, "fred", "fred-dgs5", "2026-11-27", "", fri, fredBody("2026-11-26=3.1"))
	if res, err := s.acts.Revisions(ctx, RevisionsInput{Dataset: "fred-dgs5", Key: newer}); err != nil || res.Revisions != 0 || !strings.Contains(res.Skipped, "fetched after") {
		t.Errorf("earlier object fetched later: %+v, %v", res, err)
	}

	// A key of another dataset is refused.
	if _, err := s.acts.Revisions(ctx, RevisionsInput{Dataset: "fred-dgs10", Key: mon}); err == nil {
		t.Error("a key of fred-dgs2 was accepted for fred-dgs10")
	}
}

// TestRevisionsOfKeyedRows: data.go.kr rows are told apart by their index
// name; each revised value field is a Change of its own.
func TestRevisionsOfKeyedRows(t *testing.T) {
	s := newRevisionStack(t)
	ctx := context.Background()
	body := func(items ...string) string {
		return `{"response":{"header":{"resultCode":"00","resultMsg":"NORMAL SERVICE."},"body":{"numOfRows":1000,"pageNo":1,"totalCount":` +
			fmt.Sprint(len(items)) + `,"items":{"item":[` + strings.Join(items, ",") + `]}}}}`
	}
	item := func(day, name, clpr, vs string) string {
		return fmt.Sprintf(`{"basDt":"%s","idxNm":"%s","clpr":"%s","vs":"%s","fltRt":"0.1","mkp":"1","hipr":"1","lopr":"1"}`, day, name, clpr, vs)
	}
	t1 := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	s.put(t, "datago", "fsc-stock-market-index", "2026-11-25", "2026-11-26", t1,
		body(item("20261125", "코스피", "2500.10", "1.0"), item("20261125", "코스닥", "690.00", "-2.0"), item("20261126", "코스피", "2510.00", "9.9")))
	key := s.put(t, "datago", "fsc-stock-market-index", "2026-11-26", "2026-11-27", t1.Add(24*time.Hour),
		body(item("20261126", "코스피", "2511.50", "11.4"), item("20261126", "코스닥", "691.00", "1.0"), item("20261127", "코스피", "2520.00", "8.5")))
	res, err := s.acts.Revisions(ctx, RevisionsInput{Dataset: "fsc-stock-market-index", Key: key})
	if err != nil || res.Common != 1 || res.Revisions != 2 {
		t.Fatalf("result %+v, %v", res, err)
	}
	changes, _ := s.store.Changes(ctx, store.ChangeFilter{Datasets: []string{"fsc-stock-market-index"}})
	var sums []string
	for _, c := range changes {
		sums = append(sums, c.Summary)
	}
	want := []string{"fsc-stock-market-index revised 2026-11-26 [코스피] clpr: 2510.00 → 2511.50", "fsc-stock-market-index revised 2026-11-26 [코스피] vs: 9.9 → 11.4"}
	for _, w := range want {
		found := false
		for _, s := range sums {
			found = found || s == w
		}
		if !found {
			t.Errorf("no change %q among %q", w, sums)
		}
	}
}

// TestRevisionsWithoutAStore does nothing and says so.
func TestRevisionsWithoutAStore(t *testing.T) {
	s := newRevisionStack(t)
	s.acts.cfg.Watch = nil
	key := s.put(t, "fred", "fred-dgs10", "2026-11-27", "", time.Now(), fredBody("2026-11-27=4"))
	res, err := s.acts.Revisions(context.Background(), RevisionsInput{Dataset: "fred-dgs10", Key: key})
	if err != nil || res.Skipped != "no watch store" {
		t.Errorf("%+v, %v", res, err)
	}
}
