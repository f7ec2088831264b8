package watch

import (
	"testing"
	"time"
)

func TestTimelineBetween(t *testing.T) {
	tl := Timeline{
		{At: t0, State: Up, Until: t0.Add(10 * h)},
		{At: t0.Add(2 * h), State: Down, Until: t0.Add(10 * h)},
		{At: t0.Add(3 * h), State: Unknown, Until: t0.Add(10 * h)},
		{At: t0.Add(4 * h), State: Degraded, Until: t0.Add(5 * h)}, // lapses at +5h
		{At: t0.Add(6 * h), State: Up, Until: t0.Add(7 * h)},
	}
	for _, tc := range []struct {
		from, to time.Duration
		want     Availability
	}{
		{0, 8 * h, Availability{Up: 3 * h, Down: h, Degraded: h, Unknown: 3 * h}},
		{-2 * h, 1 * h, Availability{Up: h, Unknown: 2 * h}},
		{90 * m, 150 * m, Availability{Up: 30 * m, Down: 30 * m}},
		{5 * h, 6 * h, Availability{Unknown: h}},
		{9 * h, 12 * h, Availability{Unknown: 3 * h}},
		{3 * h, 3 * h, Availability{}},
	} {
		if got := tl.Between(t0.Add(tc.from), t0.Add(tc.to)); got != tc.want {
			t.Errorf("[%s, %s): %+v, want %+v", tc.from, tc.to, got, tc.want)
		}
	}
	if got := (Timeline{}).Between(t0, t0.Add(h)); got != (Availability{Unknown: h}) {
		t.Errorf("empty: %+v", got)
	}
}

func TestUptimeArithmetic(t *testing.T) {
	a := Availability{Up: 6 * h, Degraded: 2 * h, Down: 2 * h, Unknown: 14 * h}
	if u, ok := a.Uptime(); !ok || u != 0.8 {
		t.Errorf("uptime %v %v, want 0.8: (up + degraded) / known, unknown left out", u, ok)
	}
	if _, ok := (Availability{Unknown: h}).Uptime(); ok {
		t.Error("only unknown time has an uptime")
	}
}

func TestTimelineApply(t *testing.T) {
	var tl Timeline
	tl = tl.Apply([]Mark{{At: t0, State: Up, Until: t0.Add(h)}}, t0.Add(h))
	tl = tl.Apply(nil, t0.Add(2*h)) // a probe that changed nothing extends
	tl = tl.Apply([]Mark{{At: t0.Add(3 * h), State: Unknown, Until: t0.Add(4 * h)}}, t0.Add(4*h))
	tl = tl.Apply([]Mark{{At: t0.Add(4 * h), State: Up, Until: t0.Add(5 * h)}}, t0.Add(5*h))
	// A confirmed outage from +150m: the up mark at +4h becomes down, the
	// unknown one stays, and one is inserted at +150m.
	tl = tl.Apply([]Mark{{At: t0.Add(150 * m), State: Down, Until: t0.Add(6 * h), Rewrite: true}}, t0.Add(6*h))
	want := Timeline{
		{At: t0, State: Up, Until: t0.Add(2 * h)},
		{At: t0.Add(150 * m), State: Down, Until: t0.Add(6 * h)},
		{At: t0.Add(3 * h), State: Unknown, Until: t0.Add(4 * h)},
		{At: t0.Add(4 * h), State: Down, Until: t0.Add(6 * h)},
	}
	if len(tl) != len(want) {
		t.Fatalf("timeline %+v", tl)
	}
	for i := range want {
		if tl[i] != want[i] {
			t.Errorf("mark %d: %+v, want %+v", i, tl[i], want[i])
		}
	}
	// A mark at an existing time replaces its state, keeping the later
	// Until.
	tl = tl.Apply([]Mark{{At: t0.Add(4 * h), State: Up, Until: t0.Add(5 * h)}}, time.Time{})
	if tl[3].State != Up || !tl[3].Until.Equal(t0.Add(6*h)) {
		t.Errorf("replace: %+v", tl[3])
	}
}

func TestTimelineUptimeDays(t *testing.T) {
	seoul, _ := time.LoadLocation("Asia/Seoul")
	// Up from Friday 00:00 KST, down for the two hours from Saturday
	// 10:00 KST, up again; now is Monday 12:00 KST.
	fri := time.Date(2026, 11, 27, 0, 0, 0, 0, seoul)
	end := fri.Add(100 * h)
	tl := Timeline{
		{At: fri, State: Up, Until: end},
		{At: fri.Add(34 * h), State: Down, Until: end},
		{At: fri.Add(36 * h), State: Up, Until: end},
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, seoul)
	u := tl.Uptime("ds", now, DefaultWindows, 5, seoul)
	if len(u.Days) != 5 || !u.Days[0].Day.Equal(time.Date(2026, 11, 26, 0, 0, 0, 0, seoul)) || !u.Days[4].Day.Equal(time.Date(2026, 11, 30, 0, 0, 0, 0, seoul)) {
		t.Fatalf("days %+v", u.Days)
	}
	if d := u.Days[0]; d.Unknown != 24*h || d.Known() != 0 {
		t.Errorf("Thursday: %+v", d.Availability)
	}
	if d := u.Days[2]; d.Down != 2*h || d.Up != 22*h {
		t.Errorf("Saturday: %+v", d.Availability)
	}
	if d := u.Days[4]; d.Up != 12*h || d.Unknown != 0 {
		t.Errorf("today: %+v (only up to now)", d.Availability)
	}
	w := u.Windows[0] // 24 h
	if w.Window != 24*h || w.Up != 24*h {
		t.Errorf("24h window: %+v", w)
	}
	w = u.Windows[1] // 7 d: 84 h known, 2 down
	if ratio, _ := w.Uptime(); w.Down != 2*h || w.Known() != 84*h || ratio != 82.0/84.0 {
		t.Errorf("7d window: %+v", w)
	}
}

func TestDayStartsAcrossDST(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	// 2026-11-01 is the fall-back day in New York: 25 hours long.
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, ny)
	days := DayStarts(now, 3, ny)
	if days[1].Format(time.RFC3339) != "2026-11-01T00:00:00-04:00" || days[2].Format(time.RFC3339) != "2026-11-02T00:00:00-05:00" {
		t.Errorf("days %v", days)
	}
	tl := Timeline{{At: days[0], State: Up, Until: now}}
	u := tl.Uptime("ds", now, nil, 3, ny)
	if u.Days[1].Up != 25*h {
		t.Errorf("fall-back day: %s", u.Days[1].Up)
	}
}

// BenchmarkTimelineUptime: 90 days of a dataset with eight marks a day,
// the summary's 90 bars and four windows.
func BenchmarkTimelineUptime(b *testing.B) {
	var tl Timeline
	now := t0.Add(92 * 24 * h)
	for at := t0; at.Before(now); at = at.Add(3 * h) {
		tl = append(tl, Mark{At: at, State: Up, Until: at.Add(6 * h)})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tl.Uptime("ds", now, DefaultWindows, 90, time.UTC)
	}
}
