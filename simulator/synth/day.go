// Package synth generates deterministic synthetic market data for the
// provider simulator: civil days, exchange calendars and smooth seeded
// series. Every value is a pure function of a seed, a series key and a
// time, so the simulator answers the same request with the same bytes.
package synth

import "time"

// Day is a civil date counted in days since 1970-01-01. It carries no time
// zone: callers convert a time.Time in the provider's location with DayOf.
type Day int32

// Date returns the Day of a civil date. Out-of-range months and days are
// normalised as time.Date does.
func Date(y int, m time.Month, d int) Day {
	if m < 1 || m > 12 || d < 1 || d > 28 {
		t := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		y, m, d = t.Date()
	}
	return Day(daysFromCivil(y, int(m), d))
}

// DayOf returns the civil date of t in t's location.
func DayOf(t time.Time) Day {
	y, m, d := t.Date()
	return Day(daysFromCivil(y, int(m), d))
}

// Civil returns the year, month and day.
func (d Day) Civil() (int, time.Month, int) {
	y, m, dd := civilFromDays(int64(d))
	return y, time.Month(m), dd
}

// Time returns midnight of the day in loc.
func (d Day) Time(loc *time.Location) time.Time {
	y, m, dd := d.Civil()
	return time.Date(y, m, dd, 0, 0, 0, 0, loc)
}

// Weekday returns the day of the week.
func (d Day) Weekday() time.Weekday {
	// 1970-01-01 was a Thursday.
	w := (int64(d) + 4) % 7
	if w < 0 {
		w += 7
	}
	return time.Weekday(w)
}

// Weekend reports whether the day is a Saturday or a Sunday.
func (d Day) Weekend() bool {
	w := d.Weekday()
	return w == time.Saturday || w == time.Sunday
}

// AppendYYYYMMDD appends the day as 20060102.
func (d Day) AppendYYYYMMDD(b []byte) []byte {
	y, m, dd := d.Civil()
	b = append4(b, y)
	b = append2(b, int(m))
	return append2(b, dd)
}

// AppendISO appends the day as 2006-01-02.
func (d Day) AppendISO(b []byte) []byte {
	y, m, dd := d.Civil()
	b = append4(b, y)
	b = append(b, '-')
	b = append2(b, int(m))
	b = append(b, '-')
	return append2(b, dd)
}

// YYYYMMDD returns the day as 20060102.
func (d Day) YYYYMMDD() string { return string(d.AppendYYYYMMDD(make([]byte, 0, 8))) }

// ISO returns the day as 2006-01-02.
func (d Day) ISO() string { return string(d.AppendISO(make([]byte, 0, 10))) }

// ParseYYYYMMDD parses 20060102; ok is false unless s is exactly a valid
// date in that form.
func ParseYYYYMMDD(s string) (Day, bool) {
	if len(s) != 8 {
		return 0, false
	}
	return parseParts(s[0:4], s[4:6], s[6:8])
}

// ParseISO parses 2006-01-02; ok is false unless s is exactly a valid date
// in that form.
func ParseISO(s string) (Day, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	return parseParts(s[0:4], s[5:7], s[8:10])
}

func parseParts(ys, ms, ds string) (Day, bool) {
	y, ok1 := atoiDigits(ys)
	m, ok2 := atoiDigits(ms)
	d, ok3 := atoiDigits(ds)
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > DaysIn(y, time.Month(m)) {
		return 0, false
	}
	return Day(daysFromCivil(y, m, d)), true
}

// DaysIn returns the number of days of a month.
func DaysIn(y int, m time.Month) int {
	switch m {
	case time.February:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

func atoiDigits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func append4(b []byte, n int) []byte {
	if n < 0 || n > 9999 {
		n = 0
	}
	return append(b, byte('0'+n/1000), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
}

func append2(b []byte, n int) []byte {
	return append(b, byte('0'+n/10%10), byte('0'+n%10))
}

// daysFromCivil and civilFromDays are Howard Hinnant's algorithms for the
// proleptic Gregorian calendar.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := int64(y) / 400
	if y < 0 && int64(y)%400 != 0 {
		era--
	}
	yoe := int64(y) - era*400
	mp := int64(m+9) % 12
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func civilFromDays(z int64) (int, int, int) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return int(y), int(m), int(d)
}
