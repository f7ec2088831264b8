package watch

import (
	"sort"
	"time"
)

// Timeline is a dataset's availability over time: marks sorted by At, each
// state holding from its mark to the next one or to its Until, whichever
// comes first; time outside every mark is unknown.
type Timeline []Mark

// Apply returns the timeline with one Step's marks applied and the last
// mark's Until extended to validUntil. It is the reference the stores
// implement in SQL:
//
//   - a Rewrite mark turns every mark at or after its At that is not
//     unknown into its state (a confirmed change counts from the first
//     probe that showed it; time our limiter kept us blind stays unknown);
//   - a mark at the time of an existing one replaces its state and keeps
//     the later Until; otherwise it is inserted.
func (tl Timeline) Apply(marks []Mark, validUntil time.Time) Timeline {
	out := append(Timeline(nil), tl...)
	for _, m := range marks {
		if m.Rewrite {
			for i := range out {
				if !out[i].At.Before(m.At) && out[i].State != Unknown {
					out[i].State = m.State
				}
			}
		}
		i := sort.Search(len(out), func(i int) bool { return !out[i].At.Before(m.At) })
		if i < len(out) && out[i].At.Equal(m.At) {
			out[i].State = m.State
			if m.Until.After(out[i].Until) {
				out[i].Until = m.Until
			}
			continue
		}
		m.Rewrite = false
		out = append(out, Mark{})
		copy(out[i+1:], out[i:])
		out[i] = m
	}
	if n := len(out); n > 0 && validUntil.After(out[n-1].Until) {
		out[n-1].Until = validUntil
	}
	return out
}

// Availability is how long a dataset spent in each state over a span.
type Availability struct {
	Up       time.Duration `json:"up"`
	Degraded time.Duration `json:"degraded"`
	Down     time.Duration `json:"down"`
	Unknown  time.Duration `json:"unknown"`
}

// Add adds b to a.
func (a *Availability) Add(b Availability) {
	a.Up += b.Up
	a.Degraded += b.Degraded
	a.Down += b.Down
	a.Unknown += b.Unknown
}

func (a *Availability) add(s State, d time.Duration) {
	if d <= 0 {
		return
	}
	switch s {
	case Up:
		a.Up += d
	case Degraded:
		a.Degraded += d
	case Down:
		a.Down += d
	default:
		a.Unknown += d
	}
}

// Known is the time whose state is known: up, degraded or down.
func (a Availability) Known() time.Duration { return a.Up + a.Degraded + a.Down }

// Uptime is the uptime arithmetic of docs/watch.md: (up + degraded) /
// (up + degraded + down). Degraded counts as up (the dataset answered,
// slowly or with a failure not confirmed); unknown time — our own
// throttling, a provider's rate limit, nobody probing — counts neither
// way. ok is false when no time is known (no uptime to show).
func (a Availability) Uptime() (ratio float64, ok bool) {
	known := a.Known()
	if known <= 0 {
		return 0, false
	}
	return float64(a.Up+a.Degraded) / float64(known), true
}

// Between returns the availability over [from, to).
func (tl Timeline) Between(from, to time.Time) Availability {
	var a Availability
	if !to.After(from) {
		return a
	}
	cursor := from
	// Start at the last mark at or before from: the ones before it end
	// before the span.
	first := sort.Search(len(tl), func(i int) bool { return tl[i].At.After(from) })
	if first > 0 {
		first--
	}
	for i := first; i < len(tl); i++ {
		m := tl[i]
		end := to
		if i+1 < len(tl) && tl[i+1].At.Before(end) {
			end = tl[i+1].At
		}
		if !end.After(from) {
			continue
		}
		start := m.At
		if start.Before(from) {
			start = from
		}
		if !start.Before(to) {
			break
		}
		a.add(Unknown, start.Sub(cursor)) // before the first mark
		valid := end
		if m.Until.Before(valid) {
			valid = m.Until
		}
		if valid.After(start) {
			a.add(m.State, valid.Sub(start))
			a.add(Unknown, end.Sub(valid))
		} else {
			a.add(Unknown, end.Sub(start))
		}
		cursor = end
	}
	a.add(Unknown, to.Sub(cursor))
	return a
}

// DefaultWindows are the status page's uptime windows.
var DefaultWindows = []time.Duration{24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour, 90 * 24 * time.Hour}

// WindowUptime is the availability over the window ending now.
type WindowUptime struct {
	Window time.Duration `json:"window"`
	Availability
}

// DayUptime is the availability of one calendar day (today: until now).
type DayUptime struct {
	Day time.Time `json:"day"` // midnight, in the requested location
	Availability
}

// DatasetUptime is what the status page's uptime bars and figures show
// for one dataset.
type DatasetUptime struct {
	Dataset string         `json:"dataset"`
	Windows []WindowUptime `json:"windows"`
	Days    []DayUptime    `json:"days"` // oldest first, the last is today
}

// Uptime computes the windows (each ending at now) and the last days
// calendar days in loc (nil: UTC), today included up to now.
func (tl Timeline) Uptime(dataset string, now time.Time, windows []time.Duration, days int, loc *time.Location) DatasetUptime {
	if loc == nil {
		loc = time.UTC
	}
	u := DatasetUptime{Dataset: dataset}
	for _, w := range windows {
		u.Windows = append(u.Windows, WindowUptime{Window: w, Availability: tl.Between(now.Add(-w), now)})
	}
	for _, d := range DayStarts(now, days, loc) {
		end := time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, loc)
		if end.After(now) {
			end = now
		}
		u.Days = append(u.Days, DayUptime{Day: d, Availability: tl.Between(d, end)})
	}
	return u
}

// DayStarts returns the midnights (in loc) of the last n calendar days up
// to now's, oldest first.
func DayStarts(now time.Time, n int, loc *time.Location) []time.Time {
	if loc == nil {
		loc = time.UTC
	}
	t := now.In(loc)
	out := make([]time.Time, 0, max(n, 0))
	for i := n - 1; i >= 0; i-- {
		out = append(out, time.Date(t.Year(), t.Month(), t.Day()-i, 0, 0, 0, 0, loc))
	}
	return out
}
