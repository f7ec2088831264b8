package watch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Cycle is how often a series has a period: ECOS's cycle codes, which the
// other providers' daily series share (D).
type Cycle string

// The cycles.
const (
	Annual      Cycle = "A"
	SemiAnnual  Cycle = "S"
	Quarterly   Cycle = "Q"
	Monthly     Cycle = "M"
	SemiMonthly Cycle = "SM"
	Daily       Cycle = "D"
)

// Cycles lists the cycles, longest first.
var Cycles = []Cycle{Annual, SemiAnnual, Quarterly, Monthly, SemiMonthly, Daily}

// Valid reports whether c is one of the cycles.
func (c Cycle) Valid() bool { return slices.Contains(Cycles, c) }

// Period is one period of a cycle, identified by its first civil day.
// The zero Period is "none".
type Period struct {
	Cycle Cycle
	// Start is the period's first day as a civil date: midnight UTC of
	// that calendar day, whatever the provider's timezone.
	Start time.Time
}

// IsZero reports whether p is the zero Period.
func (p Period) IsZero() bool { return p.Cycle == "" }

func civil(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// PeriodOf returns the period of cycle c holding t's calendar day in t's
// location.
func PeriodOf(c Cycle, t time.Time) Period {
	y, m, d := t.Date()
	return periodContaining(c, y, m, d)
}

func periodContaining(c Cycle, y int, m time.Month, d int) Period {
	switch c {
	case Annual:
		return Period{c, civil(y, 1, 1)}
	case SemiAnnual:
		return Period{c, civil(y, time.Month(1+6*((int(m)-1)/6)), 1)}
	case Quarterly:
		return Period{c, civil(y, time.Month(1+3*((int(m)-1)/3)), 1)}
	case Monthly:
		return Period{c, civil(y, m, 1)}
	case SemiMonthly:
		if d <= 15 {
			return Period{c, civil(y, m, 1)}
		}
		return Period{c, civil(y, m, 16)}
	case Daily:
		return Period{c, civil(y, m, d)}
	}
	return Period{}
}

// Next returns the period after p.
func (p Period) Next() Period {
	s := p.Start
	switch p.Cycle {
	case Annual:
		return Period{p.Cycle, s.AddDate(1, 0, 0)}
	case SemiAnnual:
		return Period{p.Cycle, s.AddDate(0, 6, 0)}
	case Quarterly:
		return Period{p.Cycle, s.AddDate(0, 3, 0)}
	case Monthly:
		return Period{p.Cycle, s.AddDate(0, 1, 0)}
	case SemiMonthly:
		if s.Day() == 1 {
			return Period{p.Cycle, civil(s.Year(), s.Month(), 16)}
		}
		return Period{p.Cycle, civil(s.Year(), s.Month()+1, 1)}
	case Daily:
		return Period{p.Cycle, s.AddDate(0, 0, 1)}
	}
	return p
}

// Prev returns the period before p.
func (p Period) Prev() Period {
	s := p.Start
	switch p.Cycle {
	case Annual:
		return Period{p.Cycle, s.AddDate(-1, 0, 0)}
	case SemiAnnual:
		return Period{p.Cycle, s.AddDate(0, -6, 0)}
	case Quarterly:
		return Period{p.Cycle, s.AddDate(0, -3, 0)}
	case Monthly:
		return Period{p.Cycle, s.AddDate(0, -1, 0)}
	case SemiMonthly:
		if s.Day() == 16 {
			return Period{p.Cycle, civil(s.Year(), s.Month(), 1)}
		}
		return Period{p.Cycle, civil(s.Year(), s.Month()-1, 16)}
	case Daily:
		return Period{p.Cycle, s.AddDate(0, 0, -1)}
	}
	return p
}

// End returns the instant the period ends in loc: midnight of the day
// after its last day.
func (p Period) End(loc *time.Location) time.Time {
	n := p.Next().Start
	if loc == nil {
		loc = time.UTC
	}
	return time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, loc)
}

// Before reports whether p starts before q.
func (p Period) Before(q Period) bool { return p.Start.Before(q.Start) }

// String is the canonical form: 2024 (A), 2024S1, 2024Q3, 2024-07 (M),
// 2024-07S2 (SM), 2024-07-15 (D). Within one cycle the canonical forms
// sort as the periods do.
func (p Period) String() string {
	s := p.Start
	switch p.Cycle {
	case Annual:
		return fmt.Sprintf("%04d", s.Year())
	case SemiAnnual:
		return fmt.Sprintf("%04dS%d", s.Year(), 1+(int(s.Month())-1)/6)
	case Quarterly:
		return fmt.Sprintf("%04dQ%d", s.Year(), 1+(int(s.Month())-1)/3)
	case Monthly:
		return s.Format("2006-01")
	case SemiMonthly:
		half := 1
		if s.Day() > 15 {
			half = 2
		}
		return fmt.Sprintf("%sS%d", s.Format("2006-01"), half)
	case Daily:
		return s.Format("2006-01-02")
	}
	return ""
}

// ParsePeriod reads a period of cycle c in the forms the providers send:
//
//   - a date, YYYYMMDD or YYYY-MM-DD, optionally followed by a time
//     (UPBIT's 2024-07-15T00:00:00, RFC 3339): the period holding that day
//     (FRED dates a monthly observation by its first day);
//   - A: YYYY; S: YYYYS1, YYYY-S2, YYYYH1; Q: YYYYQ3, YYYY-Q3;
//     M: YYYYMM, YYYY-MM; SM: YYYYMMS1, YYYY-MMS2, YYYY-MM-S2 (ECOS's
//     forms and the canonical ones).
//
// Years run from 1000 to 9999.
func ParsePeriod(c Cycle, s string) (Period, error) {
	if !c.Valid() {
		return Period{}, fmt.Errorf("parsing period %q: unknown cycle %q (known: A, S, Q, M, SM, D)", clip(s), string(c))
	}
	p, ok := parsePeriod(c, strings.TrimSpace(s))
	if !ok {
		return Period{}, fmt.Errorf("parsing period %q: not a period of cycle %s", clip(s), string(c))
	}
	return p, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return truncateUTF8(s, 40) + "…"
	}
	return s
}

func digits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func year(s string) (int, bool) {
	if len(s) != 4 {
		return 0, false
	}
	y, ok := digits(s)
	return y, ok && y >= 1000
}

// date reads YYYYMMDD or YYYY-MM-DD with an optional T… or space… time.
func date(s string) (int, time.Month, int, bool) {
	if i := strings.IndexAny(s, "T "); i >= 0 {
		s = s[:i]
	}
	var ys, ms, ds string
	switch {
	case len(s) == 8:
		ys, ms, ds = s[:4], s[4:6], s[6:]
	case len(s) == 10 && s[4] == '-' && s[7] == '-':
		ys, ms, ds = s[:4], s[5:7], s[8:]
	default:
		return 0, 0, 0, false
	}
	y, ok1 := year(ys)
	m, ok2 := digits(ms)
	d, ok3 := digits(ds)
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 {
		return 0, 0, 0, false
	}
	t := civil(y, time.Month(m), d)
	if t.Day() != d { // 2024-02-30
		return 0, 0, 0, false
	}
	return y, time.Month(m), d, true
}

func parsePeriod(c Cycle, s string) (Period, bool) {
	if y, m, d, ok := date(s); ok {
		return periodContaining(c, y, m, d), true
	}
	if len(s) < 4 {
		return Period{}, false
	}
	y, ok := year(s[:4])
	if !ok {
		return Period{}, false
	}
	rest := strings.TrimPrefix(s[4:], "-")
	switch c {
	case Annual:
		if rest == "" {
			return Period{c, civil(y, 1, 1)}, true
		}
	case SemiAnnual:
		if len(rest) == 2 && (rest[0] == 'S' || rest[0] == 'H') && (rest[1] == '1' || rest[1] == '2') {
			return Period{c, civil(y, time.Month(1+6*int(rest[1]-'1')), 1)}, true
		}
	case Quarterly:
		if len(rest) == 2 && rest[0] == 'Q' && rest[1] >= '1' && rest[1] <= '4' {
			return Period{c, civil(y, time.Month(1+3*int(rest[1]-'1')), 1)}, true
		}
	case Monthly:
		if m, ok := digits(rest); ok && len(rest) == 2 && m >= 1 && m <= 12 {
			return Period{c, civil(y, time.Month(m), 1)}, true
		}
	case SemiMonthly:
		if len(rest) >= 4 {
			ms, half := rest[:2], strings.TrimPrefix(rest[2:], "-")
			if m, ok := digits(ms); ok && m >= 1 && m <= 12 && (half == "S1" || half == "S2") {
				d := 1
				if half == "S2" {
					d = 16
				}
				return Period{c, civil(y, time.Month(m), d)}, true
			}
		}
	}
	return Period{}, false
}
