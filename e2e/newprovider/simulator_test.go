package newprovider_test

// The toy's step 6 (docs/providers.md, Adding a provider): what
// simulator/<p>/<p>_test.go holds for a real provider — its wire over
// HTTP with simtest: the shape of its test key, its answers, its errors,
// its determinism.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/simtest"
)

func toyHarness(t *testing.T, seed int64) *simtest.Harness {
	t.Helper()
	reg := toyRegistry(t)
	return simtest.New(t, func(o *simulator.Options) { o.Registry = reg; o.Seed = seed; o.RateScale = 1 })
}

type toyAnswer struct {
	Data struct {
		Total int
		Rows  []struct{ Day, V string }
	}
	Error string
}

// TestToySimulator: the toy answers its rows newest first, up to the
// day before the simulator's clock, pages them, refuses an unknown key
// and a bad page size, and answers the same bytes for the same seed.
func TestToySimulator(t *testing.T) {
	h := toyHarness(t, 42)
	key := h.Creds["TOY_API_KEY"]
	if !regexp.MustCompile(`^[a-z0-9]{24}$`).MatchString(key) {
		t.Errorf("TOY_API_KEY = %q: not 24 lower-case letters and digits", key)
	}
	get := func(query string) (int, toyAnswer, []byte) {
		t.Helper()
		h.Clock.Advance(time.Second) // a fresh second of the toy's 2 a second
		r := h.Get("/v1/widgets?"+query, nil)
		var a toyAnswer
		simtest.MustJSON(t, r.Body, &a)
		return r.Status, a, r.Body
	}
	// simtest.Now is 2025-03-11 05:30 UTC: the newest row is 2025-03-10.
	status, a, body := get("from=2025-03-01&to=2025-03-31&page=1&size=20&key=" + key)
	if status != http.StatusOK || a.Data.Total != 10 || len(a.Data.Rows) != 10 || a.Data.Rows[0].Day != "2025-03-10" || a.Data.Rows[9].Day != "2025-03-01" {
		t.Errorf("March 2025: %d, %s", status, simtest.Truncate(body))
	}
	status, a, _ = get("from=2025-01-01&to=2025-01-31&page=2&size=20&key=" + key)
	if status != http.StatusOK || a.Data.Total != 31 || len(a.Data.Rows) != 11 || a.Data.Rows[0].Day != "2025-01-11" {
		t.Errorf("January's second page: %d, %+v", status, a.Data)
	}
	if status, a, _ = get("from=2025-03-01&to=2025-03-31&page=1&size=20&key=nope"); status != http.StatusUnauthorized || a.Error == "" {
		t.Errorf("unknown key: %d %+v", status, a)
	}
	if status, a, _ = get("from=2025-03-01&to=2025-03-31&page=1&size=21&key=" + key); status != http.StatusBadRequest || a.Error == "" {
		t.Errorf("21 rows a page: %d %+v", status, a)
	}
	sample := func(h *simtest.Harness) []byte {
		h.Clock.Advance(time.Second)
		return h.Get("/v1/widgets?from=2024-01-01&to=2024-01-31&page=1&size=20&key="+h.Creds["TOY_API_KEY"], nil).Body
	}
	first, again, other := sample(h), sample(toyHarness(t, 42)), sample(toyHarness(t, 7))
	if !bytes.Equal(first, again) || bytes.Equal(first, other) || !json.Valid(first) {
		t.Errorf("same seed alike %v, another seed different %v", bytes.Equal(first, again), !bytes.Equal(first, other))
	}
}
