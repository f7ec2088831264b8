package planner

import (
	"time"

	"github.com/sluicehq/sluice/wire"
)

// Range is a span of civil dates, both ends included, at midnight UTC.
type Range struct {
	From, To time.Time
}

// Cut splits [from, to] (civil dates, both included) into chunks whose
// ends fall on the boundaries of c.Align: each chunk spans at most
// c.Periods units, and a chunk of several units starts on a unit whose
// index is a multiple of c.Periods (see wire.Coverage), so two plans of
// overlapping ranges cut the same chunks where they overlap. The first
// and the last chunk are clipped to from and to. The chunks cover
// [from, to] exactly once, in order; none is empty. to before from gives
// none.
func Cut(c wire.Coverage, from, to time.Time) []Range {
	from, to = civil(from), civil(to)
	if to.Before(from) {
		return nil
	}
	c = c.Resolved(wire.Day)
	var out []Range
	for start := from; !start.After(to); {
		end := groupEnd(c.Align, c.Periods, start)
		if end.After(to) {
			end = to
		}
		out = append(out, Range{From: start, To: end})
		start = end.AddDate(0, 0, 1)
	}
	return out
}

// groupEnd is the last day of the group of k units of u that holds t.
func groupEnd(u wire.Unit, k int, t time.Time) time.Time {
	left := k - mod(index(u, t), k) // units from t's own to the group's end
	return u.Back(t, -left).AddDate(0, 0, -1)
}

// epochMonday is the Monday weeks are counted from.
var epochMonday = time.Date(1970, 1, 5, 0, 0, 0, 0, time.UTC)

// index numbers the unit holding t: days and weeks from 1970, the others
// from year 0.
func index(u wire.Unit, t time.Time) int {
	t = u.Floor(t)
	y, m := t.Year(), int(t.Month())-1
	switch u {
	case wire.Week:
		return floorDiv(int(t.Sub(epochMonday)/(24*time.Hour)), 7)
	case wire.HalfMonth:
		i := y*24 + m*2
		if t.Day() > 1 {
			i++
		}
		return i
	case wire.Month:
		return y*12 + m
	case wire.Quarter:
		return y*4 + m/3
	case wire.HalfYear:
		return y*2 + m/6
	case wire.Year:
		return y
	}
	return int(t.Unix() / 86400)
}

func mod(a, k int) int {
	r := a % k
	if r < 0 {
		r += k
	}
	return r
}

func floorDiv(a, k int) int {
	q := a / k
	if a%k != 0 && (a < 0) != (k < 0) {
		q--
	}
	return q
}

// civil returns the civil date of t at midnight UTC.
func civil(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Rows is the most rows a dataset of cycle unit u with coverage c
// answers for [from, to]: the periods the range touches (weekdays only
// for a daily cycle on a market calendar) times the rows a period holds.
func Rows(c wire.Coverage, u wire.Unit, from, to time.Time) int {
	c = c.Resolved(u)
	from, to = civil(from), civil(to)
	if to.Before(from) {
		return 0
	}
	var n int
	if (u == wire.Day || u == "") && c.Weekdays {
		n = weekdays(from, to)
	} else {
		if u == "" {
			u = wire.Day
		}
		n = u.Periods(from, to)
	}
	return n * c.RowsPerPeriod
}

// weekdays counts Monday–Friday in [from, to].
func weekdays(from, to time.Time) int {
	days := int(to.Sub(from)/(24*time.Hour)) + 1
	n := days / 7 * 5
	wd := from.Weekday()
	for i := 0; i < days%7; i++ {
		if d := (wd + time.Weekday(i)) % 7; d != time.Saturday && d != time.Sunday {
			n++
		}
	}
	return n
}

// Pages is how many calls rows take at pageRows a page: at least one (an
// empty answer is a call too).
func Pages(rows, pageRows int) int {
	if pageRows <= 0 || rows <= pageRows {
		return 1
	}
	return (rows + pageRows - 1) / pageRows
}
