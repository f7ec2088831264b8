package wire

import (
	"testing"
	"time"
)

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func TestFormatParseAndWrite(t *testing.T) {
	for _, tc := range []struct {
		f     Format
		s     string
		start time.Time
	}{
		{YYYYMMDD, "20240229", date(2024, 2, 29)},
		{ISODate, "2023-12-31", date(2023, 12, 31)},
		{ISODateTime, "2024-01-07T00:00:00", date(2024, 1, 7)},
		{YYYYMMDDhhmmss, "20250311143000", time.Date(2025, 3, 11, 14, 30, 0, 0, time.UTC)},
		{YYYY, "2016", date(2016, 1, 1)},
		{YYYYSn, "2024S2", date(2024, 7, 1)},
		{YYYYQn, "2024Q4", date(2024, 10, 1)},
		{YYYYMM, "202402", date(2024, 2, 1)},
		{YYYYMMSn, "202402S1", date(2024, 2, 1)},
		{YYYYMMSn, "202402S2", date(2024, 2, 16)},
	} {
		got, err := tc.f.Parse(tc.s)
		if err != nil || !got.Equal(tc.start) {
			t.Errorf("%s.Parse(%q) = %v, %v; want %v", tc.f, tc.s, got, err, tc.start)
		}
		if w := tc.f.Write(got); w != tc.s {
			t.Errorf("%s.Write(%v) = %q, want %q", tc.f, got, w, tc.s)
		}
	}
	if got, err := ISODateTime.Parse("2024-01-07T00:00:00Z"); err != nil || !got.Equal(date(2024, 1, 7)) {
		t.Errorf("a trailing Z: %v %v", got, err)
	}
	// The end of a half month or a month writes the same period.
	for _, tc := range []struct {
		f    Format
		t    time.Time
		want string
	}{
		{YYYYMMSn, date(2024, 2, 15), "202402S1"}, {YYYYMMSn, date(2024, 2, 29), "202402S2"},
		{YYYYSn, date(2024, 6, 30), "2024S1"}, {YYYYQn, date(2024, 3, 31), "2024Q1"},
	} {
		if got := tc.f.Write(tc.t); got != tc.want {
			t.Errorf("%s.Write(%v) = %q, want %q", tc.f, tc.t, got, tc.want)
		}
	}
}

func TestFormatParseRejects(t *testing.T) {
	for _, tc := range []struct {
		f Format
		s string
	}{
		{YYYYMMDD, "20230229"}, {YYYYMMDD, "2024011"}, {YYYYMMDD, "2024-01-01"}, {YYYYMMDD, "+2024010"},
		{ISODate, "2024-1-01"}, {ISODate, "2024-13-01"}, {ISODateTime, "2024-01-07 00:00:00"},
		{YYYYMMDDhhmmss, "20250311250000"}, {YYYY, "24"}, {YYYY, "２０２４"},
		{YYYYSn, "2024S3"}, {YYYYSn, "2024Q1"}, {YYYYQn, "2024Q0"}, {YYYYQn, "2024Q5"}, {YYYYQn, "202401"},
		{YYYYMM, "202413"}, {YYYYMMSn, "202401S3"}, {YYYYMMSn, "202413S1"}, {YYYYMMSn, "2024-1S1"},
		{Format("YYMM"), "2401"}, {YYYYMMDD, ""},
	} {
		if got, err := tc.f.Parse(tc.s); err == nil {
			t.Errorf("%s.Parse(%q) = %v, want an error", tc.f, tc.s, got)
		}
	}
	if Format("nope").Valid() || !YYYYMMSn.Valid() {
		t.Error("Valid")
	}
}

func TestUnitCalendar(t *testing.T) {
	for _, tc := range []struct {
		u                 Unit
		t                 time.Time
		floor, next, last time.Time
	}{
		{Day, time.Date(2024, 2, 29, 23, 59, 0, 0, time.UTC), date(2024, 2, 29), date(2024, 3, 1), date(2024, 2, 29)},
		{Week, date(2024, 3, 3), date(2024, 2, 26), date(2024, 3, 4), date(2024, 3, 3)}, // a Sunday
		{Week, date(2024, 3, 4), date(2024, 3, 4), date(2024, 3, 11), date(2024, 3, 10)},
		{HalfMonth, date(2024, 2, 15), date(2024, 2, 1), date(2024, 2, 16), date(2024, 2, 15)},
		{HalfMonth, date(2024, 2, 16), date(2024, 2, 16), date(2024, 3, 1), date(2024, 2, 29)},
		{HalfMonth, date(2023, 2, 20), date(2023, 2, 16), date(2023, 3, 1), date(2023, 2, 28)},
		{HalfMonth, date(2024, 12, 31), date(2024, 12, 16), date(2025, 1, 1), date(2024, 12, 31)},
		{Month, date(2024, 1, 31), date(2024, 1, 1), date(2024, 2, 1), date(2024, 1, 31)},
		{Month, date(2100, 2, 10), date(2100, 2, 1), date(2100, 3, 1), date(2100, 2, 28)}, // not a leap year
		{Quarter, date(2024, 5, 31), date(2024, 4, 1), date(2024, 7, 1), date(2024, 6, 30)},
		{HalfYear, date(2024, 12, 31), date(2024, 7, 1), date(2025, 1, 1), date(2024, 12, 31)},
		{Year, date(2016, 2, 29), date(2016, 1, 1), date(2017, 1, 1), date(2016, 12, 31)},
	} {
		if got := tc.u.Floor(tc.t); !got.Equal(tc.floor) {
			t.Errorf("%s.Floor(%v) = %v, want %v", tc.u, tc.t, got, tc.floor)
		}
		if got := tc.u.Next(tc.t); !got.Equal(tc.next) {
			t.Errorf("%s.Next(%v) = %v, want %v", tc.u, tc.t, got, tc.next)
		}
		if got := tc.u.Last(tc.t); !got.Equal(tc.last) {
			t.Errorf("%s.Last(%v) = %v, want %v", tc.u, tc.t, got, tc.last)
		}
	}
}
