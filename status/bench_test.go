package status

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/watch"
)

// BenchmarkSummaryPage renders the public page of the default registry
// (193 datasets) with a week of hourly probes of every FRED and ECOS
// dataset, and reports the page's size, plain and gzipped.
func BenchmarkSummaryPage(b *testing.B) {
	f := newFixture(b, nil)
	for _, d := range f.reg.Datasets {
		if d.Provider == "fred" || d.Provider == "ecos" {
			f.observe(b, d.ID, testNow.Add(-7*24*time.Hour), testNow.Add(-time.Hour), time.Hour, watch.OK, 200)
		}
	}
	f.refresh(b)
	var size int
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "bytes/page")
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	b.ReportMetric(float64(rec.Body.Len()), "gzip-bytes/page")
}
