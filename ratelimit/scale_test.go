package ratelimit_test

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
)

func simAt(t *testing.T, reg *registry.Registry, scale float64) string {
	t.Helper()
	sim, err := simulator.New(simulator.Options{Registry: reg, RateScale: scale})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestCheckScale: a rate scale must be a positive finite number, and any
// scale but 1 is refused unless every provider's base URL is a simulator
// that says (GET /_sim/stats) it runs at that scale.
func TestCheckScale(t *testing.T) {
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sim5, sim10 := simAt(t, reg, 5), simAt(t, reg, 10)
	notSim := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notSim.Close)
	redirect := httptest.NewServer(http.RedirectHandler(sim5+"/_sim/stats", http.StatusFound))
	t.Cleanup(redirect.Close)
	for _, tc := range []struct {
		name  string
		scale float64
		urls  map[string]string
		want  string // "" for accepted
	}{
		{"one against the real providers", 1, nil, ""},
		{"NaN", math.NaN(), map[string]string{"*": sim5}, "positive finite"},
		{"infinite", math.Inf(1), map[string]string{"*": sim5}, "positive finite"},
		{"zero", 0, map[string]string{"*": sim5}, "positive finite"},
		{"negative", -2, map[string]string{"*": sim5}, "positive finite"},
		{"scaled against the real providers", 5, nil, "real base URL"},
		{"scaled against one real provider", 5, map[string]string{"kis": sim5, "ecos": sim5, "fred": sim5, "upbit": sim5}, "provider datago would be called at its real base URL"},
		{"scaled against a simulator at that scale", 5, map[string]string{"*": sim5}, ""},
		{"scaled against a simulator at another scale", 5, map[string]string{"*": sim10}, "runs at rate scale 10, not 5"},
		{"scaled against something else", 5, map[string]string{"*": notSim.URL}, "is not a simulator"},
		{"scaled against a redirect to a simulator", 5, map[string]string{"*": redirect.URL}, "is not a simulator"},
	} {
		err := ratelimit.CheckScale(ctx, tc.scale, reg, tc.urls, nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}
