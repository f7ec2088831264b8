package sink

import (
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"8388608": 8 << 20, "8MiB": 8 << 20, "8m": 8 << 20, "8 MiB": 8 << 20, "16MB": 16e6,
		"5GiB": 5 << 30, "64kib": 64 << 10, "1KB": 1000, "0": 0, " 12B ": 12, "2G": 2 << 30,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-5MiB", "1.5GiB", "8 TiB", "99999999999999999999", "9223372036854775807GiB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 8 << 20: "8MiB", 5 << 30: "5GiB", 1536: "1536B", 64 << 10: "64KiB", 1000: "1000B"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"8MiB", "16MB", "1", "x", "9223372036854775807", "1 gib"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d, negative", s, n)
		}
		back, err := ParseSize(FormatSize(n))
		if err != nil || back != n {
			t.Fatalf("FormatSize(%d) = %q does not parse back: %d, %v", n, FormatSize(n), back, err)
		}
	})
}
