package status

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
)

// TestCoverageMap: range keys cover their days; a year with no object is
// missing, one with some days partial, a year a manifest records a failed
// chunk of is failed, the coming year is not due; the fill command spans
// the run of incomplete years from the first missing day to the last.
func TestCoverageMap(t *testing.T) {
	f := newFixture(t, nil)
	ds := "fred-dgs10" // a business-day series: Monday to Friday expected
	for y := 2016; y <= 2025; y++ {
		switch y {
		case 2020: // deliberately missing
		case 2021: // the first half only
			f.put(t, ds, date(2021, 1, 1), date(2021, 6, 30), `{}`)
		case 2023: // failed chunk, nothing landed
		default:
			f.put(t, ds, date(y, 1, 1), date(y, 12, 31), `{}`)
		}
	}
	// 2026: daily keys up to yesterday (weekdays), November 30 included.
	for d := date(2026, 1, 1); d.Before(date(2026, 12, 1)); d = d.AddDate(0, 0, 1) {
		if wd := d.Weekday(); wd != time.Saturday && wd != time.Sunday {
			f.put(t, ds, d, time.Time{}, `{}`)
		}
	}
	ix, err := ScanLake(context.Background(), f.lake, f.reg, testNow)
	if err != nil {
		t.Fatal(err)
	}
	chunks := []ChunkStatus{{Dataset: ds, From: date(2023, 3, 1), To: date(2023, 3, 31), Status: ChunkFailed}}
	rows := ix.CoverageMap(f.reg, []*registry.Dataset{f.reg.Dataset(ds)}, Years(2016, 2027), chunks, testNow)
	got := map[string]Coverage{}
	for _, c := range rows[0].Cells {
		got[c.Label] = c.State
	}
	want := map[string]Coverage{"2016": Complete, "2019": Complete, "2020": Missing, "2021": Partial, "2022": Complete,
		"2023": Failed, "2024": Complete, "2026": Complete, "2027": NotDue}
	for y, w := range want {
		if got[y] != w {
			t.Errorf("%s: %s, want %s", y, got[y], w)
		}
	}
	if !rows[0].Weekdays {
		t.Error("fred-dgs10 is not read as a business-day series")
	}
	var cmds []string
	for _, fc := range rows[0].Fill {
		cmds = append(cmds, fc.Command)
	}
	wantCmds := []string{
		"sluice backfill start --from 2020-01-01 --to 2021-12-31 --dataset fred-dgs10",
		"sluice backfill start --from 2023-01-02 --to 2023-12-29 --dataset fred-dgs10",
	}
	if strings.Join(cmds, "\n") != strings.Join(wantCmds, "\n") {
		t.Errorf("fill commands:\n%s\nwant:\n%s", strings.Join(cmds, "\n"), strings.Join(wantCmds, "\n"))
	}
	// A calendar-day series (UPBIT) expects weekends too: a weekdays-only
	// year is partial.
	up := "upbit-krw-btc-days"
	if f.reg.Dataset(up) == nil {
		up = firstOf(f.reg, "upbit")
	}
	for d := date(2025, 1, 1); d.Before(date(2026, 1, 1)); d = d.AddDate(0, 0, 1) {
		if wd := d.Weekday(); wd != time.Saturday && wd != time.Sunday {
			f.put(t, up, d, time.Time{}, `[]`)
		}
	}
	ix, _ = ScanLake(context.Background(), f.lake, f.reg, testNow)
	rows = ix.CoverageMap(f.reg, []*registry.Dataset{f.reg.Dataset(up)}, Years(2025, 2025), nil, testNow)
	if c := rows[0].Cells[0]; c.State != Partial || c.Expected != 365 || c.Present != 261 {
		t.Errorf("%s 2025 with weekdays only: %+v", up, c)
	}
}

func firstOf(reg *registry.Registry, provider string) string {
	return reg.DatasetsOf(provider)[0].ID
}

// TestCoverageNoData: a chunk a manifest records as answering no data
// counts as covered.
func TestCoverageNoData(t *testing.T) {
	f := newFixture(t, nil)
	ds := f.reg.Dataset("fred-dgs10")
	ix, _ := ScanLake(context.Background(), f.lake, f.reg, testNow)
	rows := ix.CoverageMap(f.reg, []*registry.Dataset{ds}, Years(2019, 2019),
		[]ChunkStatus{{Dataset: ds.ID, From: date(2019, 1, 1), To: date(2019, 12, 31), Status: ChunkNoData}}, testNow)
	if rows[0].Cells[0].State != Complete || len(rows[0].Fill) != 0 {
		t.Errorf("no-data year: %+v", rows[0])
	}
}

// TestWeekdaysBetween checks the closed form against counting.
func TestWeekdaysBetween(t *testing.T) {
	for a := dayOf(date(2024, 1, 1)); a < dayOf(date(2024, 1, 15)); a++ {
		for b := a - 1; b < a+40; b++ {
			n := 0
			for d := a; d <= b; d++ {
				if d.weekday() {
					n++
				}
			}
			if got := weekdaysBetween(a, b); got != n {
				t.Fatalf("weekdaysBetween(%s, %s) = %d, want %d", a, b, got, n)
			}
		}
	}
}

// TestNewestPeriod: the newest object's rows give the newest period
// (canonical); an object whose rows cannot be read falls back to its key;
// keys Sluice does not build are counted, not indexed.
func TestNewestPeriod(t *testing.T) {
	f := newFixture(t, nil)
	ds := "fred-dgs10"
	f.put(t, ds, date(2026, 11, 1), date(2026, 11, 27), `{"observations":[{"date":"2026-11-26","value":"4.1"},{"date":"2026-11-27","value":"4.2"}]}`)
	f.put(t, ds, date(2026, 10, 1), date(2026, 10, 31), `{"observations":[]}`)
	up := firstOf(f.reg, "upbit")
	f.put(t, up, date(2026, 11, 30), time.Time{}, `not json`)
	if _, err := f.lake.Put(context.Background(), "foreign/object.bin", strings.NewReader("x"), sinkMeta()); err != nil {
		t.Fatal(err)
	}
	f.refresh(t)
	ix, newest := f.srv.lake(context.Background())
	if ix.Foreign != 1 || ix.Objects != 3 {
		t.Errorf("index: %d objects, %d foreign", ix.Objects, ix.Foreign)
	}
	if np := newest[ds]; np.Period != "2026-11-27" || np.Source != SourceRows || np.LogicalDate != "2026-11-27" {
		t.Errorf("%s newest: %+v", ds, np)
	}
	if np := newest[up]; np.Period != "2026-11-30" || np.Source != SourceKey {
		t.Errorf("%s newest: %+v", up, np)
	}
	r := f.get(t, "/")
	if row := rowOf(t, r.body, ds); !strings.Contains(row, "2026-11-27 <small>(rows)</small>") {
		t.Errorf("row does not show the lake's newest period:\n%s", row)
	}
}
