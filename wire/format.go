package wire

import (
	"fmt"
	"strconv"
	"time"
)

// Format is how a provider writes a period, in a request's date range and
// in a row's period field.
type Format string

// The period formats the providers use.
const (
	YYYYMMDD       Format = "YYYYMMDD"            // 20240102 (KIS, ECOS D, data.go.kr basDt)
	ISODate        Format = "YYYY-MM-DD"          // 2024-01-02 (FRED)
	ISODateTime    Format = "YYYY-MM-DDThh:mm:ss" // 2024-01-02T00:00:00, a trailing Z allowed (UPBIT)
	YYYYMMDDhhmmss Format = "YYYYMMDDhhmmss"      // 20240102153000 (TourAPI modifiedtime)
	YYYY           Format = "YYYY"                // 2024 (ECOS A)
	YYYYSn         Format = "YYYYSn"              // 2024S1, 2024S2: halves of a year (ECOS S)
	YYYYQn         Format = "YYYYQn"              // 2024Q1 … 2024Q4 (ECOS Q)
	YYYYMM         Format = "YYYYMM"              // 202401 (ECOS M)
	YYYYMMSn       Format = "YYYYMMSn"            // 202401S1 (days 1–15), 202401S2 (16 to the end) (ECOS SM)
)

// Formats lists every Format, for validation messages.
var Formats = []Format{YYYYMMDD, ISODate, ISODateTime, YYYYMMDDhhmmss, YYYY, YYYYSn, YYYYQn, YYYYMM, YYYYMMSn}

// Valid reports whether f is one of Formats.
func (f Format) Valid() bool {
	for _, g := range Formats {
		if f == g {
			return true
		}
	}
	return false
}

// Parse reads a period written in f and returns its first instant, in UTC
// (civil dates carry no timezone: the provider's timezone applies). Every
// field is range-checked: 20240230 and 2024Q5 are errors.
func (f Format) Parse(s string) (time.Time, error) {
	bad := func() (time.Time, error) {
		return time.Time{}, fmt.Errorf("%q is not a %s period", truncate(s, 40), f)
	}
	layout := ""
	switch f {
	case YYYYMMDD:
		layout = "20060102"
	case ISODate:
		layout = "2006-01-02"
	case YYYYMMDDhhmmss:
		layout = "20060102150405"
	case YYYYMM:
		layout = "200601"
	case YYYY:
		layout = "2006"
	case ISODateTime:
		if n := len(s); n > 0 && s[n-1] == 'Z' {
			s = s[:n-1]
		}
		layout = "2006-01-02T15:04:05"
	case YYYYSn, YYYYQn:
		if len(s) != 6 || !digits(s[:4]) || !digits(s[5:]) {
			return bad()
		}
		y, _ := strconv.Atoi(s[:4])
		n := int(s[5] - '0')
		switch {
		case f == YYYYSn && s[4] == 'S' && n >= 1 && n <= 2:
			return time.Date(y, time.Month((n-1)*6+1), 1, 0, 0, 0, 0, time.UTC), nil
		case f == YYYYQn && s[4] == 'Q' && n >= 1 && n <= 4:
			return time.Date(y, time.Month((n-1)*3+1), 1, 0, 0, 0, 0, time.UTC), nil
		}
		return bad()
	case YYYYMMSn:
		if len(s) != 8 || s[6] != 'S' || !digits(s[:6]) || (s[7] != '1' && s[7] != '2') {
			return bad()
		}
		t, err := time.Parse("200601", s[:6])
		if err != nil {
			return bad()
		}
		if s[7] == '2' {
			t = t.AddDate(0, 0, 15)
		}
		return t, nil
	default:
		return time.Time{}, fmt.Errorf("unknown period format %q", truncate(string(f), 40))
	}
	// time.Parse accepts fewer digits than the layout in some fields;
	// insist on the exact width.
	if len(s) != len(layout) || !sameShape(s, layout) {
		return bad()
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return bad()
	}
	return t, nil
}

// Write writes the period of f that holds t (its civil date and, for
// ISODateTime and YYYYMMDDhhmmss, its time of day).
func (f Format) Write(t time.Time) string {
	y, m, d := t.Date()
	switch f {
	case YYYYMMDD:
		return t.Format("20060102")
	case ISODate:
		return t.Format("2006-01-02")
	case ISODateTime:
		return t.Format("2006-01-02T15:04:05")
	case YYYYMMDDhhmmss:
		return t.Format("20060102150405")
	case YYYY:
		return fmt.Sprintf("%04d", y)
	case YYYYSn:
		return fmt.Sprintf("%04dS%d", y, (int(m)-1)/6+1)
	case YYYYQn:
		return fmt.Sprintf("%04dQ%d", y, (int(m)-1)/3+1)
	case YYYYMM:
		return fmt.Sprintf("%04d%02d", y, int(m))
	case YYYYMMSn:
		half := 1
		if d > 15 {
			half = 2
		}
		return fmt.Sprintf("%04d%02dS%d", y, int(m), half)
	}
	return ""
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// sameShape reports whether s has a digit wherever layout has one and the
// layout's other characters elsewhere.
func sameShape(s, layout string) bool {
	for i := 0; i < len(layout); i++ {
		l := layout[i]
		if l >= '0' && l <= '9' {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		} else if s[i] != l {
			return false
		}
	}
	return true
}

// Unit is the stretch of the calendar one row covers.
type Unit string

// The units of the providers' rows.
const (
	Day       Unit = "day"
	Week      Unit = "week" // Monday to Sunday
	HalfMonth Unit = "half_month"
	Month     Unit = "month"
	Quarter   Unit = "quarter"
	HalfYear  Unit = "half_year"
	Year      Unit = "year"
)

// Floor returns the first day of the unit that holds the civil date of t,
// at midnight UTC.
func (u Unit) Floor(t time.Time) time.Time {
	y, m, d := t.Date()
	switch u {
	case Week:
		day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		return day.AddDate(0, 0, -int((day.Weekday()+6)%7))
	case HalfMonth:
		if d > 15 {
			d = 16
		} else {
			d = 1
		}
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	case Month:
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	case Quarter:
		return time.Date(y, (m-1)/3*3+1, 1, 0, 0, 0, 0, time.UTC)
	case HalfYear:
		return time.Date(y, (m-1)/6*6+1, 1, 0, 0, 0, 0, time.UTC)
	case Year:
		return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Next returns the first day of the unit after the one holding t.
func (u Unit) Next(t time.Time) time.Time {
	start := u.Floor(t)
	switch u {
	case Week:
		return start.AddDate(0, 0, 7)
	case HalfMonth:
		if start.Day() == 1 {
			return start.AddDate(0, 0, 15)
		}
		return time.Date(start.Year(), start.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	case Month:
		return start.AddDate(0, 1, 0)
	case Quarter:
		return start.AddDate(0, 3, 0)
	case HalfYear:
		return start.AddDate(0, 6, 0)
	case Year:
		return start.AddDate(1, 0, 0)
	}
	return start.AddDate(0, 0, 1)
}

// Last returns the last day of the unit holding t.
func (u Unit) Last(t time.Time) time.Time { return u.Next(t).AddDate(0, 0, -1) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Back returns the first day of the unit n units before the one holding t
// (n = 0: the unit's own first day), at midnight UTC. A negative n counts
// forward.
func (u Unit) Back(t time.Time, n int) time.Time {
	start := u.Floor(t)
	switch u {
	case Week:
		return start.AddDate(0, 0, -7*n)
	case HalfMonth:
		// Halves counted from year 0: 24 a year, the second of a month
		// starting on the 16th.
		i := start.Year()*24 + int(start.Month()-1)*2
		if start.Day() > 1 {
			i++
		}
		i -= n
		y, r := i/24, i%24
		if r < 0 {
			y, r = y-1, r+24
		}
		d := 1
		if r%2 == 1 {
			d = 16
		}
		return time.Date(y, time.Month(r/2+1), d, 0, 0, 0, 0, time.UTC)
	case Month:
		return start.AddDate(0, -n, 0)
	case Quarter:
		return start.AddDate(0, -3*n, 0)
	case HalfYear:
		return start.AddDate(0, -6*n, 0)
	case Year:
		return start.AddDate(-n, 0, 0)
	}
	return start.AddDate(0, 0, -n)
}

// Window returns the trailing window of periods units that ends on the
// civil date d: from the first day of the unit periods-1 units before the
// one holding d, to d itself (never beyond d, so that the window of a
// logical date asks for nothing after it). periods below 1 count as 1.
func (u Unit) Window(d time.Time, periods int) (from, to time.Time) {
	y, m, dd := d.Date()
	to = time.Date(y, m, dd, 0, 0, 0, 0, time.UTC)
	return u.Back(to, max(periods, 1)-1), to
}

// Periods returns how many units the window [from, to] touches: the
// periods a request for it may answer, one row each for a series.
func (u Unit) Periods(from, to time.Time) int {
	if to.Before(from) {
		return 0
	}
	n := 0
	for p := u.Floor(from); !p.After(to); p = u.Next(p) {
		n++
	}
	return n
}
