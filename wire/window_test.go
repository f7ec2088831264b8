package wire

import (
	"testing"
	"time"
)

// TestWindow: the trailing window of n periods ending on a logical date,
// per unit, across month ends, year ends and leap days. The window starts
// on the first day of the period n-1 periods back and ends on the date
// itself.
func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		u        Unit
		d        time.Time
		n        int
		from, to time.Time
		periods  int
	}{
		// Days: a week and a half back, over a leap day and a year end.
		{Day, date(2024, 3, 5), 10, date(2024, 2, 25), date(2024, 3, 5), 10},
		{Day, date(2023, 3, 5), 10, date(2023, 2, 24), date(2023, 3, 5), 10},
		{Day, date(2027, 1, 3), 10, date(2026, 12, 25), date(2027, 1, 3), 10},
		{Day, date(2026, 11, 30), 1, date(2026, 11, 30), date(2026, 11, 30), 1},
		{Day, date(2026, 11, 30), 0, date(2026, 11, 30), date(2026, 11, 30), 1}, // below 1 counts as 1
		// Weeks (Monday to Sunday): D a Thursday, 4 weeks from the Monday three weeks back.
		{Week, date(2024, 2, 29), 4, date(2024, 2, 5), date(2024, 2, 29), 4},
		// Half months (ECOS SM): the halves are 1–15 and 16–end.
		{HalfMonth, date(2024, 2, 29), 6, date(2023, 12, 1), date(2024, 2, 29), 6},
		{HalfMonth, date(2024, 2, 15), 6, date(2023, 11, 16), date(2024, 2, 15), 6},
		{HalfMonth, date(2024, 1, 16), 2, date(2024, 1, 1), date(2024, 1, 16), 2},
		{HalfMonth, date(2024, 1, 1), 2, date(2023, 12, 16), date(2024, 1, 1), 2},
		{HalfMonth, date(2024, 1, 1), 25, date(2023, 1, 1), date(2024, 1, 1), 25},
		// Months: from a month end (31st, a leap February) back six months.
		{Month, date(2026, 11, 30), 6, date(2026, 6, 1), date(2026, 11, 30), 6},
		{Month, date(2024, 8, 31), 6, date(2024, 3, 1), date(2024, 8, 31), 6},
		{Month, date(2024, 2, 29), 6, date(2023, 9, 1), date(2024, 2, 29), 6},
		{Month, date(2026, 3, 1), 3, date(2026, 1, 1), date(2026, 3, 1), 3},
		// Quarters: a year of them, from a quarter's last and first day.
		{Quarter, date(2026, 12, 31), 4, date(2026, 1, 1), date(2026, 12, 31), 4},
		{Quarter, date(2027, 1, 1), 4, date(2026, 4, 1), date(2027, 1, 1), 4},
		{Quarter, date(2024, 2, 29), 4, date(2023, 4, 1), date(2024, 2, 29), 4},
		// Half years (ECOS S).
		{HalfYear, date(2027, 3, 1), 3, date(2026, 1, 1), date(2027, 3, 1), 3},
		{HalfYear, date(2026, 7, 1), 3, date(2025, 7, 1), date(2026, 7, 1), 3},
		// Years (ECOS A): from a leap day.
		{Year, date(2028, 2, 29), 3, date(2026, 1, 1), date(2028, 2, 29), 3},
		{Year, date(2026, 12, 31), 1, date(2026, 1, 1), date(2026, 12, 31), 1},
	} {
		from, to := tc.u.Window(tc.d, tc.n)
		if !from.Equal(tc.from) || !to.Equal(tc.to) {
			t.Errorf("%s.Window(%s, %d) = %s..%s, want %s..%s", tc.u, tc.d.Format(time.DateOnly), tc.n,
				from.Format(time.DateOnly), to.Format(time.DateOnly), tc.from.Format(time.DateOnly), tc.to.Format(time.DateOnly))
		}
		if got := tc.u.Periods(from, to); got != tc.periods {
			t.Errorf("%s.Periods(%s, %s) = %d, want %d", tc.u, from.Format(time.DateOnly), to.Format(time.DateOnly), got, tc.periods)
		}
	}
}

// TestWindowsOverlap: the windows of consecutive logical dates overlap
// (a watch compares a day's object with the previous day's) whenever the
// window holds two periods or more, and each day's window contains the
// previous day's newest period.
func TestWindowsOverlap(t *testing.T) {
	for _, u := range []Unit{Day, Week, HalfMonth, Month, Quarter, HalfYear, Year} {
		for n := 2; n <= 6; n++ {
			d := date(2023, 12, 1)
			for i := 0; i < 800; i++ {
				next := d.AddDate(0, 0, 1)
				pf, pt := u.Window(d, n)
				nf, nt := u.Window(next, n)
				if nf.After(pt) || pf.After(nf) || !nt.After(pt) {
					t.Fatalf("%s n=%d: window of %s is %s..%s, of the next day %s..%s", u, n, d.Format(time.DateOnly),
						pf.Format(time.DateOnly), pt.Format(time.DateOnly), nf.Format(time.DateOnly), nt.Format(time.DateOnly))
				}
				if !u.Floor(pt).Equal(u.Floor(nt)) && nf.After(u.Floor(pt)) {
					t.Fatalf("%s n=%d: the window of %s drops the previous day's period", u, n, next.Format(time.DateOnly))
				}
				d = next
			}
		}
	}
}

// TestBackRoundTrips: Back by n then by -n returns the unit's start.
func TestBackRoundTrips(t *testing.T) {
	for _, u := range []Unit{Day, Week, HalfMonth, Month, Quarter, HalfYear, Year} {
		for _, d := range []time.Time{date(2024, 2, 29), date(2023, 12, 31), date(2000, 1, 16)} {
			for _, n := range []int{0, 1, 5, 37} {
				if got := u.Back(u.Back(d, n), -n); !got.Equal(u.Floor(d)) {
					t.Errorf("%s: Back(Back(%s, %d), %d) = %s, want %s", u, d.Format(time.DateOnly), n, -n, got.Format(time.DateOnly), u.Floor(d).Format(time.DateOnly))
				}
			}
		}
	}
}
