package planner

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/wire"
)

func d(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

func rangesString(rs []Range) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("[%s..%s]", r.From.Format(time.DateOnly), r.To.Format(time.DateOnly))
	}
	return s
}

// The coverages the connectors declare (connector/*/spec.go), as data here
// so that the package's tests need no connector.
var (
	ecosCov   = wire.Coverage{Align: wire.Year}
	fredCov   = wire.Coverage{Align: wire.Year}
	kisCov    = wire.Coverage{Align: wire.Month, Periods: 2, Weekdays: true}
	upbitCov  = wire.Coverage{Align: wire.Day, Periods: 200}
	datagoCov = wire.Coverage{Align: wire.Year, Weekdays: true}
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cov      wire.Coverage
		unit     wire.Unit
		from, to string
		want     string
	}{
		{"ecos years clipped at both ends", ecosCov, wire.Day, "2016-03-15", "2018-02-10",
			"[2016-03-15..2016-12-31][2017-01-01..2017-12-31][2018-01-01..2018-02-10]"},
		{"fred one day", fredCov, wire.Day, "2020-02-29", "2020-02-29", "[2020-02-29..2020-02-29]"},
		{"fred year end to year start", fredCov, wire.Day, "2019-12-31", "2020-01-01", "[2019-12-31..2019-12-31][2020-01-01..2020-01-01]"},
		{"kis two months from mid-January of a leap year", kisCov, wire.Day, "2024-01-10", "2024-06-30",
			"[2024-01-10..2024-02-29][2024-03-01..2024-04-30][2024-05-01..2024-06-30]"},
		{"kis two months, not a leap year", kisCov, wire.Day, "2023-02-01", "2023-03-05", "[2023-02-01..2023-02-28][2023-03-01..2023-03-05]"},
		{"kis November–December", kisCov, wire.Day, "2025-11-30", "2026-01-02", "[2025-11-30..2025-12-31][2026-01-01..2026-01-02]"},
		{"calendar quarters", wire.Coverage{Align: wire.Month, Periods: 3}, wire.Day, "2025-02-15", "2025-12-31",
			"[2025-02-15..2025-03-31][2025-04-01..2025-06-30][2025-07-01..2025-09-30][2025-10-01..2025-12-31]"},
		{"quarter unit", wire.Coverage{Align: wire.Quarter}, wire.Day, "2025-03-31", "2025-04-01", "[2025-03-31..2025-03-31][2025-04-01..2025-04-01]"},
		{"half months across a leap February", wire.Coverage{Align: wire.HalfMonth}, wire.Day, "2024-02-10", "2024-03-20",
			"[2024-02-10..2024-02-15][2024-02-16..2024-02-29][2024-03-01..2024-03-15][2024-03-16..2024-03-20]"},
		{"half years", wire.Coverage{Align: wire.HalfYear}, wire.Day, "2024-06-30", "2025-07-01",
			"[2024-06-30..2024-06-30][2024-07-01..2024-12-31][2025-01-01..2025-06-30][2025-07-01..2025-07-01]"},
		{"weeks start on Monday", wire.Coverage{Align: wire.Week}, wire.Day, "2026-11-25", "2026-12-08",
			"[2026-11-25..2026-11-29][2026-11-30..2026-12-06][2026-12-07..2026-12-08]"},
		{"upbit 200-day grid", upbitCov, wire.Day, "2016-01-01", "2016-12-31",
			"[2016-01-01..2016-07-17][2016-07-18..2016-12-31]"},
		{"ecos annual cycle", ecosCov.Resolved(wire.Year), wire.Year, "2016-01-01", "2017-12-31", "[2016-01-01..2016-12-31][2017-01-01..2017-12-31]"},
		{"kis yearly cycle: the connector's two months become years", kisCov.Resolved(wire.Year), wire.Year, "2016-01-01", "2017-06-30",
			"[2016-01-01..2016-12-31][2017-01-01..2017-06-30]"},
		{"a weekly cycle is cut by weeks", kisCov.Resolved(wire.Week), wire.Week, "2026-11-25", "2026-12-01", "[2026-11-25..2026-11-29][2026-11-30..2026-12-01]"},
		{"empty when to is before from", ecosCov, wire.Day, "2020-01-02", "2020-01-01", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rangesString(Cut(tc.cov, d(tc.from), d(tc.to))); got != tc.want {
				t.Errorf("Cut %s..%s = %s\nwant %s", tc.from, tc.to, got, tc.want)
			}
		})
	}
}

// The grid is 200 days from 1970-01-01: a chunk boundary falls on a day
// whose number is a multiple of 200, whatever the range.
func TestCutUpbitGrid(t *testing.T) {
	rs := Cut(upbitCov, d("2016-01-01"), d("2026-08-31"))
	for i, r := range rs {
		n := r.From.Unix() / 86400
		if i > 0 && n%200 != 0 {
			t.Errorf("chunk %d starts on day %d", i, n)
		}
		if i > 0 && i < len(rs)-1 && r.To.Sub(r.From) != 199*24*time.Hour {
			t.Errorf("chunk %d %s..%s is not 200 days", i, r.From, r.To)
		}
	}
	if len(rs) != 20 {
		t.Errorf("%d chunks, want 20", len(rs))
	}
}

// Rows per cycle, leap years and month ends included.
func TestRowsPerCycle(t *testing.T) {
	for _, tc := range []struct {
		unit     wire.Unit
		cov      wire.Coverage
		from, to string
		want     int
	}{
		{wire.Day, ecosCov, "2016-01-01", "2016-12-31", 366},
		{wire.Day, ecosCov, "2015-01-01", "2015-12-31", 365},
		{wire.Month, ecosCov, "2016-01-01", "2016-12-31", 12},
		{wire.HalfMonth, ecosCov, "2016-01-01", "2016-12-31", 24},
		{wire.Quarter, ecosCov, "2016-01-01", "2016-12-31", 4},
		{wire.HalfYear, ecosCov, "2016-01-01", "2016-12-31", 2},
		{wire.Year, ecosCov, "2016-01-01", "2016-12-31", 1},
		// Clipped mid-period: the periods the range touches.
		{wire.HalfMonth, ecosCov, "2016-02-15", "2016-03-15", 3},
		{wire.HalfMonth, ecosCov, "2016-02-16", "2016-03-15", 2},
		{wire.Day, ecosCov, "2016-02-15", "2016-03-15", 30},
		{wire.Day, ecosCov, "2015-02-15", "2015-03-15", 29},
		{wire.Month, ecosCov, "2016-01-31", "2016-02-01", 2},
		{wire.Quarter, ecosCov, "2016-03-31", "2016-04-01", 2},
		{wire.HalfYear, ecosCov, "2016-06-30", "2016-07-01", 2},
		{wire.Year, ecosCov, "2016-12-31", "2017-01-01", 2},
		// Weekdays: March 2024 has 21, April 22.
		{wire.Day, kisCov, "2024-03-01", "2024-04-30", 43},
		{wire.Day, kisCov, "2026-11-28", "2026-11-29", 0}, // a weekend
		{wire.Day, wire.Coverage{Align: datagoCov.Align, Weekdays: true, RowsPerPeriod: 125}, "2024-01-01", "2024-12-31", 262 * 125},
	} {
		if got := Rows(tc.cov, tc.unit, d(tc.from), d(tc.to)); got != tc.want {
			t.Errorf("Rows(%s, %s..%s) = %d, want %d", tc.unit, tc.from, tc.to, got, tc.want)
		}
	}
}

// Two months of weekdays never need a second KIS page of 50; a quarter
// does.
func TestKISChunksAreOnePage(t *testing.T) {
	for _, r := range Cut(kisCov, d("2016-01-01"), d("2026-12-31")) {
		if rows := Rows(kisCov, wire.Day, r.From, r.To); Pages(rows, 50) != 1 {
			t.Errorf("%s..%s: %d rows", r.From.Format(time.DateOnly), r.To.Format(time.DateOnly), rows)
		}
	}
	if rows := Rows(kisCov, wire.Day, d("2024-01-01"), d("2024-03-31")); Pages(rows, 50) != 2 {
		t.Errorf("a quarter of %d weekdays is not two pages", rows)
	}
}

func TestPages(t *testing.T) {
	for _, tc := range [][3]int{{0, 50, 1}, {1, 50, 1}, {50, 50, 1}, {51, 50, 2}, {32750, 1000, 33}, {10, 0, 1}} {
		if got := Pages(tc[0], tc[1]); got != tc[2] {
			t.Errorf("Pages(%d, %d) = %d, want %d", tc[0], tc[1], got, tc[2])
		}
	}
}

// FuzzCut: for any coverage and range, Cut never panics and its chunks
// cover [from, to] exactly once, in order, none empty, each within one
// aligned group.
func FuzzCut(f *testing.F) {
	f.Add(uint8(0), uint16(200), int32(16801), uint16(3896))
	f.Add(uint8(3), uint16(2), int32(-5), uint16(400))
	f.Add(uint8(2), uint16(1), int32(16800), uint16(60))
	f.Add(uint8(1), uint16(7), int32(0), uint16(0))
	f.Fuzz(func(t *testing.T, unit uint8, periods uint16, fromDay int32, span uint16) {
		cov := wire.Coverage{Align: wire.Units[int(unit)%len(wire.Units)], Periods: int(periods) % (wire.MaxCoveragePeriods + 1)}
		from := time.Unix(int64(fromDay%200000)*86400, 0).UTC()
		to := from.AddDate(0, 0, int(span)%8000)
		rs := Cut(cov, from, to)
		if len(rs) == 0 {
			t.Fatalf("no chunk for %s..%s", from, to)
		}
		next := from
		for i, r := range rs {
			if !r.From.Equal(next) {
				t.Fatalf("chunk %d starts %s, want %s", i, r.From, next)
			}
			if r.To.Before(r.From) {
				t.Fatalf("chunk %d empty: %s..%s", i, r.From, r.To)
			}
			c := cov.Resolved(wire.Day)
			if end := groupEnd(c.Align, c.Periods, r.From); r.To.After(end) {
				t.Fatalf("chunk %d %s..%s crosses its group's end %s", i, r.From, r.To, end)
			}
			if i < len(rs)-1 && !r.To.Equal(groupEnd(c.Align, c.Periods, r.From)) {
				t.Fatalf("chunk %d %s..%s ends before its group does", i, r.From, r.To)
			}
			next = r.To.AddDate(0, 0, 1)
		}
		if !rs[len(rs)-1].To.Equal(to) {
			t.Fatalf("last chunk ends %s, want %s", rs[len(rs)-1].To, to)
		}
	})
}
