package status

import (
	"testing"
	"time"
)

// FuzzDecodeProgress: a backfill's progress answer, whatever it holds,
// never panics the page and keeps the percent within 0 to 100 (or the
// "not said" -1) and the texts bounded.
func FuzzDecodeProgress(f *testing.F) {
	for _, s := range []string{
		`{"id":"backfill-2016-01-01-2025-12-31-all","from":"2016-01-01","to":"2025-12-31","state":"running","percent":42.5,"eta":"2026-12-02T00:00:00Z","counts":{"done":10,"failed":1},"providers":[{"provider":"fred","state":"running"}]}`,
		`{"percent":-3}`, `{"percent":1e308}`, `[]`, `null`, `{"counts":[1,2]}`, `{"message":"` + string(make([]byte, 500)) + `"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		b := Backfill{Percent: -1, Started: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
		decodeProgress(raw, &b)
		if b.Percent != -1 && (b.Percent < 0 || b.Percent > 100) {
			t.Fatalf("percent %v", b.Percent)
		}
		if len(b.Message) > 300+len("…") {
			t.Fatalf("message of %d bytes", len(b.Message))
		}
		b.estimate(time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC))
	})
}

// FuzzKOGLType: any licence type text gives a type 1 to 4 or none.
func FuzzKOGLType(f *testing.F) {
	for _, s := range []string{"KOGL-1", "공공누리 제4유형", "kogl type 2", "proprietary", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n := KOGLType(s); n != "" && koglTypes[n] == "" {
			t.Fatalf("KOGLType(%q) = %q", s, n)
		}
	})
}
