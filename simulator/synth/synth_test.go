package synth

import (
	"math"
	"testing"
	"time"
)

func TestDayRoundTrip(t *testing.T) {
	start := time.Date(1899, 12, 25, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 200*366; i += 7 {
		tm := start.AddDate(0, 0, i)
		d := DayOf(tm)
		if got := d.Time(time.UTC); !got.Equal(tm) {
			t.Fatalf("day %d: Time = %v, want %v", d, got, tm)
		}
		if d.Weekday() != tm.Weekday() {
			t.Fatalf("%v: Weekday = %v, want %v", tm, d.Weekday(), tm.Weekday())
		}
		if d.YYYYMMDD() != tm.Format("20060102") || d.ISO() != tm.Format("2006-01-02") {
			t.Fatalf("%v: formats %s %s", tm, d.YYYYMMDD(), d.ISO())
		}
		if p, ok := ParseYYYYMMDD(d.YYYYMMDD()); !ok || p != d {
			t.Fatalf("ParseYYYYMMDD(%s) = %d, %v", d.YYYYMMDD(), p, ok)
		}
		if p, ok := ParseISO(d.ISO()); !ok || p != d {
			t.Fatalf("ParseISO(%s) = %d, %v", d.ISO(), p, ok)
		}
	}
	if Date(1970, 1, 1) != 0 {
		t.Fatalf("epoch = %d", Date(1970, 1, 1))
	}
	for _, bad := range []string{"20240230", "2024013", "2024-1-01", "abcdefgh", "20241301", ""} {
		if _, ok := ParseYYYYMMDD(bad); ok {
			t.Errorf("ParseYYYYMMDD(%q) ok", bad)
		}
		if _, ok := ParseISO(bad); ok {
			t.Errorf("ParseISO(%q) ok", bad)
		}
	}
}

func TestCalendars(t *testing.T) {
	cases := []struct {
		cal  Calendar
		day  Day
		open bool
	}{
		{US, Date(2024, 7, 4), false},
		{US, Date(2024, 7, 5), true},
		{US, Date(2024, 11, 28), false}, // Thanksgiving
		{US, Date(2024, 5, 27), false},  // Memorial Day
		{US, Date(2025, 1, 20), false},  // MLK
		{US, Date(2023, 6, 19), false},  // Juneteenth
		{US, Date(2021, 6, 18), true},   // before Juneteenth
		{US, Date(2022, 12, 26), false}, // Christmas on Sunday, observed Monday
		{US, Date(2024, 7, 6), false},   // Saturday
		{KRX, Date(2025, 1, 1), false},
		{KRX, Date(2025, 1, 2), true},
		{KRX, Date(2024, 12, 31), false},
		{KRX, Date(2024, 10, 9), false},
		{KRX, Date(2024, 10, 10), true},
		{Weekdays, Date(2024, 12, 25), true},
		{Weekdays, Date(2024, 12, 28), false},
		{EveryDay, Date(2024, 12, 28), true},
	}
	for _, c := range cases {
		if got := c.cal.Open(c.day); got != c.open {
			t.Errorf("calendar %d Open(%s) = %v, want %v", c.cal, c.day.ISO(), got, c.open)
		}
	}
	if p := KRX.Prev(Date(2025, 1, 2)); p != Date(2024, 12, 30) {
		t.Errorf("KRX.Prev(2025-01-02) = %s", p.ISO())
	}
	if n := KRX.Next(Date(2024, 12, 30)); n != Date(2025, 1, 2) {
		t.Errorf("KRX.Next(2024-12-30) = %s", n.ISO())
	}
}

func TestSeriesDeterministicAndPlausible(t *testing.T) {
	a := NewSeries(7, "kis|0001", 2500, 0.01)
	b := NewSeries(7, "kis|0001", 2500, 0.01)
	c := NewSeries(8, "kis|0001", 2500, 0.01)
	d0 := float64(Date(2024, 1, 2))
	if a.Level(d0) != b.Level(d0) || a.Bar(d0, d0+1, 5) != b.Bar(d0, d0+1, 5) {
		t.Fatal("same seed and key gave different values")
	}
	if a.Level(d0) == c.Level(d0) {
		t.Fatal("different seeds gave the same level")
	}
	maxMove := 0.0
	prev := a.Bar(d0-1, d0, int64(d0-1)).Close
	for i := 0; i < 3650; i++ {
		t0 := d0 + float64(i)
		bar := a.Bar(t0, t0+1, int64(t0))
		if !(bar.Low <= bar.Open && bar.Low <= bar.Close && bar.High >= bar.Open && bar.High >= bar.Close && bar.Low > 0) {
			t.Fatalf("day %d: inconsistent bar %+v", i, bar)
		}
		if bar.Close < 2500/3 || bar.Close > 2500*3 {
			t.Fatalf("day %d: close %v far from base", i, bar.Close)
		}
		maxMove = math.Max(maxMove, math.Abs(bar.Close/prev-1))
		prev = bar.Close
	}
	if maxMove > 0.1 {
		t.Errorf("largest daily move %.3f: not market-like for 1%% vol", maxMove)
	}
	if maxMove == 0 {
		t.Error("series never moves")
	}
}

// TestLatestNextOpen: a provider that publishes a business day's data on
// the next business day at an hour: Friday's appears on Monday, a
// holiday's on the business day after it, nothing on a weekend.
func TestLatestNextOpen(t *testing.T) {
	chicago, err := time.LoadLocation("America/Chicago")
	if err != nil {
		t.Fatal(err)
	}
	at := func(y int, m time.Month, d, h int) time.Time { return time.Date(y, m, d, h, 0, 0, 0, chicago) }
	for _, tc := range []struct {
		now  time.Time
		want Day
	}{
		{at(2026, 12, 1, 7), Date(2026, 11, 27)},   // Tuesday morning: Monday's is due at 16:00
		{at(2026, 12, 1, 16), Date(2026, 11, 30)},  // Tuesday 16:00: Monday's
		{at(2026, 11, 28, 12), Date(2026, 11, 26)}, // Saturday: Thursday (Thanksgiving) came out on Friday
		{at(2026, 11, 30, 15), Date(2026, 11, 26)}, // Monday before 16:00: still Thursday's
		{at(2026, 11, 30, 17), Date(2026, 11, 27)}, // Monday 17:00: Friday's
		{at(2026, 11, 27, 17), Date(2026, 11, 26)}, // Friday after Thanksgiving: Thursday's
		{at(2026, 11, 26, 17), Date(2026, 11, 24)}, // Thanksgiving: no publication, Tuesday's still newest
	} {
		if got := LatestNextOpen(Weekdays, US, tc.now, chicago, 16); got != tc.want {
			t.Errorf("at %s: %s, want %s", tc.now, got.ISO(), tc.want.ISO())
		}
	}
}
