package synth

import "time"

// Calendar says which days a market publishes data for.
type Calendar int

// Calendars.
const (
	// EveryDay: crypto markets trade every day.
	EveryDay Calendar = iota
	// Weekdays: Monday to Friday, no holidays (FX, overseas quotes).
	Weekdays
	// KRX: Korean exchange days — weekdays without the fixed-date public
	// holidays, Labour Day and the year-end closing day (31 Dec). Lunar
	// holidays (설날, 추석) and substitute holidays are not modelled.
	KRX
	// US: weekdays without the U.S. federal holidays the bond market
	// closes for (with Saturday/Sunday observance).
	US
)

// Open reports whether the market has data for day d.
func (c Calendar) Open(d Day) bool {
	switch c {
	case EveryDay:
		return true
	case Weekdays:
		return !d.Weekend()
	case KRX:
		return !d.Weekend() && !KRXHoliday(d)
	case US:
		return !d.Weekend() && !USHoliday(d)
	}
	return true
}

// Prev returns the last open day strictly before d (searching at most a
// month back; d-1 if none is found).
func (c Calendar) Prev(d Day) Day {
	for i := Day(1); i <= 31; i++ {
		if c.Open(d - i) {
			return d - i
		}
	}
	return d - 1
}

// Next returns the first open day strictly after d.
func (c Calendar) Next(d Day) Day {
	for i := Day(1); i <= 31; i++ {
		if c.Open(d + i) {
			return d + i
		}
	}
	return d + 1
}

// KRXHoliday reports the fixed-date days the Korea Exchange is closed.
func KRXHoliday(d Day) bool {
	_, m, dd := d.Civil()
	switch {
	case m == time.January && dd == 1,
		m == time.March && dd == 1,
		m == time.May && (dd == 1 || dd == 5),
		m == time.June && dd == 6,
		m == time.August && dd == 15,
		m == time.October && (dd == 3 || dd == 9),
		m == time.December && (dd == 25 || dd == 31):
		return true
	}
	return false
}

// USHoliday reports the U.S. federal holidays (as observed) the Treasury
// market closes for: New Year's Day, Martin Luther King Jr. Day,
// Washington's Birthday, Memorial Day, Juneteenth (from 2022),
// Independence Day, Labor Day, Columbus Day, Veterans Day, Thanksgiving
// and Christmas.
func USHoliday(d Day) bool {
	y, m, dd := d.Civil()
	wd := d.Weekday()
	// Fixed dates, observed on Friday when on Saturday and Monday when on
	// Sunday.
	fixed := func(fm time.Month, fd int) bool {
		h := Date(y, fm, fd)
		switch h.Weekday() {
		case time.Saturday:
			h--
		case time.Sunday:
			h++
		}
		return h == d
	}
	if fixed(time.January, 1) || (d.Weekday() == time.Friday && m == time.December && dd == 31 && Date(y+1, time.January, 1).Weekday() == time.Saturday) {
		return true
	}
	if (y >= 2022 && fixed(time.June, 19)) || fixed(time.July, 4) || fixed(time.November, 11) || fixed(time.December, 25) {
		return true
	}
	nth := func(fm time.Month, n int, w time.Weekday) bool {
		return m == fm && wd == w && (dd-1)/7 == n-1
	}
	switch {
	case nth(time.January, 3, time.Monday), nth(time.February, 3, time.Monday),
		nth(time.September, 1, time.Monday), nth(time.October, 2, time.Monday),
		nth(time.November, 4, time.Thursday):
		return true
	case m == time.May && wd == time.Monday && dd+7 > DaysIn(y, time.May):
		return true // last Monday of May
	}
	return false
}
