package synth

import "time"

// Latest returns the newest day whose data is published at now: a day d is
// published lag days later at hour:00 in loc (lag 0: the same day), and
// only open days of cal have data.
func Latest(cal Calendar, now time.Time, loc *time.Location, lag, hour int) Day {
	t := now.In(loc)
	d := DayOf(t) - Day(lag)
	if t.Hour() < hour {
		d--
	}
	for i := 0; i < 40 && !cal.Open(d); i++ {
		d--
	}
	return d
}

// Pick returns a deterministic value in [lo, hi) for key: a level for an
// instrument the simulator has no table entry for.
func Pick(seed int64, key string, lo, hi float64) float64 {
	u := float64(Hash(seed, key, 0)>>11) / (1 << 53)
	return lo + u*(hi-lo)
}

// LatestNextOpen returns the newest open day of cal whose data is
// published at now when a day's data appears on the next open day of pub
// (strictly after it) at hour:00 in loc: a provider that publishes on
// business days only, so Friday's value appears on Monday.
func LatestNextOpen(cal, pub Calendar, now time.Time, loc *time.Location, hour int) Day {
	t := now.In(loc)
	today := DayOf(t)
	d := today
	for i := 0; i < 60; i++ {
		if cal.Open(d) {
			if p := pub.Next(d); p < today || (p == today && t.Hour() >= hour) {
				return d
			}
		}
		d--
	}
	return d
}
