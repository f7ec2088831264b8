package registry

import (
	"strings"
	"testing"
	"time"
)

// FuzzExpand feeds arbitrary parameter values to Expand: it never panics,
// and a value it accepts holds no brace and no placeholder left unfilled.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"{from}", "{to:YYYY-MM-DD}", "{until}", "{until:YYYYMM}x", "a{from}b{until}c", "{", "}", "{until:}", "{:}"} {
		f.Add(s, int64(0), int64(30))
	}
	f.Fuzz(func(t *testing.T, s string, fromDays, spanDays int64) {
		from := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, int(fromDays%20000))
		to := from.AddDate(0, 0, int(spanDays%4000))
		out, err := Expand(s, from, to)
		if err != nil {
			return
		}
		if strings.ContainsAny(s, "{}") && strings.ContainsAny(out, "{}") {
			t.Fatalf("Expand(%q) = %q: braces left", s, out)
		}
		if strings.Contains(s, "{until}") && !strings.Contains(out, to.AddDate(0, 0, 1).Format("20060102")) {
			t.Fatalf("Expand(%q) = %q: no day after %s", s, out, to.Format(time.DateOnly))
		}
	})
}
