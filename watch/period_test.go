package watch

import (
	"testing"
	"time"
)

func TestParsePeriod(t *testing.T) {
	for _, tc := range []struct {
		c       Cycle
		in, out string
	}{
		{Daily, "20261127", "2026-11-27"},
		{Daily, "2026-11-27", "2026-11-27"},
		{Daily, "2026-11-27T00:00:00", "2026-11-27"},
		{Daily, "2026-11-27T09:00:00+09:00", "2026-11-27"},
		{Daily, "2026-11-27 09:00:00", "2026-11-27"},
		{Daily, " 2024-02-29 ", "2024-02-29"},
		{Monthly, "202611", "2026-11"},
		{Monthly, "2026-11", "2026-11"},
		{Monthly, "2026-11-01", "2026-11"},
		{Quarterly, "2026Q3", "2026Q3"},
		{Quarterly, "2026-Q4", "2026Q4"},
		{Quarterly, "2026-07-01", "2026Q3"},
		{SemiAnnual, "2026S1", "2026S1"},
		{SemiAnnual, "2026-H2", "2026S2"},
		{SemiAnnual, "2026-07-01", "2026S2"},
		{Annual, "2026", "2026"},
		{Annual, "2026-01-01", "2026"},
		{SemiMonthly, "202611S1", "2026-11S1"},
		{SemiMonthly, "2026-11S2", "2026-11S2"},
		{SemiMonthly, "2026-11-S2", "2026-11S2"},
		{SemiMonthly, "2026-11-16", "2026-11S2"},
		{SemiMonthly, "2026-11-15", "2026-11S1"},
	} {
		p, err := ParsePeriod(tc.c, tc.in)
		if err != nil {
			t.Errorf("%s %q: %v", tc.c, tc.in, err)
			continue
		}
		if p.String() != tc.out {
			t.Errorf("%s %q = %s, want %s", tc.c, tc.in, p, tc.out)
		}
		back, err := ParsePeriod(tc.c, p.String())
		if err != nil || back != p {
			t.Errorf("%s %s does not round-trip: %v %v", tc.c, p, back, err)
		}
	}
	for _, tc := range []struct {
		c  Cycle
		in string
	}{
		{Daily, ""}, {Daily, "2026-02-30"}, {Daily, "20261301"}, {Daily, "0999-01-01"}, {Daily, "2026-1-1"},
		{Daily, "202611"}, {Monthly, "2026-13"}, {Monthly, "2026"}, {Quarterly, "2026Q5"}, {Quarterly, "2026Q0"},
		{SemiAnnual, "2026S3"}, {Annual, "26"}, {Annual, "２０２６"}, {SemiMonthly, "2026-11S3"}, {SemiMonthly, "2026-11"},
		{"W", "2026-11-27"}, {Daily, "T"},
	} {
		if p, err := ParsePeriod(tc.c, tc.in); err == nil {
			t.Errorf("%s %q: accepted as %s", tc.c, tc.in, p)
		}
	}
}

func TestPeriodArithmetic(t *testing.T) {
	for _, tc := range []struct {
		c              Cycle
		in, prev, next string
		endUTC         string
	}{
		{Daily, "2026-12-31", "2026-12-30", "2027-01-01", "2027-01-01T00:00:00Z"},
		{Monthly, "2026-01", "2025-12", "2026-02", "2026-02-01T00:00:00Z"},
		{Quarterly, "2026Q1", "2025Q4", "2026Q2", "2026-04-01T00:00:00Z"},
		{SemiAnnual, "2026S1", "2025S2", "2026S2", "2026-07-01T00:00:00Z"},
		{Annual, "2026", "2025", "2027", "2027-01-01T00:00:00Z"},
		{SemiMonthly, "2026-01S1", "2025-12S2", "2026-01S2", "2026-01-16T00:00:00Z"},
		{SemiMonthly, "2026-12S2", "2026-12S1", "2027-01S1", "2027-01-01T00:00:00Z"},
	} {
		p, _ := ParsePeriod(tc.c, tc.in)
		if p.Prev().String() != tc.prev || p.Next().String() != tc.next {
			t.Errorf("%s: prev %s next %s", tc.in, p.Prev(), p.Next())
		}
		if got := p.End(nil).Format(time.RFC3339); got != tc.endUTC {
			t.Errorf("%s: end %s, want %s", tc.in, got, tc.endUTC)
		}
		if !p.Prev().Before(p) || p.Before(p) {
			t.Errorf("%s: Before", tc.in)
		}
	}
	seoul, _ := time.LoadLocation("Asia/Seoul")
	p, _ := ParsePeriod(Daily, "2026-11-27")
	if got := p.End(seoul).UTC().Format(time.RFC3339); got != "2026-11-27T15:00:00Z" {
		t.Errorf("end in Seoul = %s", got)
	}
	// 23:30 UTC on the 27th is the 28th in Seoul.
	if got := PeriodOf(Daily, time.Date(2026, 11, 27, 23, 30, 0, 0, time.UTC).In(seoul)); got.String() != "2026-11-28" {
		t.Errorf("PeriodOf = %s", got)
	}
}

// FuzzParsePeriod: never panics, and whatever parses round-trips through
// its canonical form and sorts with Next.
func FuzzParsePeriod(f *testing.F) {
	for _, s := range []string{"20261127", "2026-11", "2026Q3", "2026S1", "2026", "202611S2", "2026-11-27T00:00:00", "9999-12-31"} {
		f.Add("D", s)
		f.Add("SM", s)
	}
	f.Fuzz(func(t *testing.T, cycle, s string) {
		p, err := ParsePeriod(Cycle(cycle), s)
		if err != nil {
			return
		}
		back, err := ParsePeriod(p.Cycle, p.String())
		if err != nil || back != p {
			t.Fatalf("%s %q → %s does not round-trip (%v)", cycle, s, p, err)
		}
		if n := p.Next(); n.Start.Year() <= 9999 && (!p.Before(n) || n.Prev() != p || !(p.String() < n.String())) {
			t.Fatalf("%s: next %s", p, n)
		}
	})
}
