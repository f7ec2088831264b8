package ratelimit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/sluicehq/sluice/registry"
)

// ScaleCheckTimeout bounds how long CheckScale waits for a simulator's
// answer.
const ScaleCheckTimeout = 5 * time.Second

// CheckScale refuses a rate scale that would let a worker exceed a real
// provider's limits. The scale must be a positive finite number; any scale
// other than 1 multiplies every declared rate, which only a simulator
// running at the same scale may receive. So every provider with datasets
// must have a base URL override (baseURLs by provider id, "*" for all) that
// answers GET /_sim/stats, the simulator's control endpoint, with the same
// rate_scale. hc nil means a client with no redirects and
// ScaleCheckTimeout.
func CheckScale(ctx context.Context, scale float64, reg *registry.Registry, baseURLs map[string]string, hc *http.Client) error {
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 {
		return fmt.Errorf("rate scale %v: must be a positive finite number", scale)
	}
	if scale == 1 {
		return nil
	}
	if hc == nil {
		hc = &http.Client{Timeout: ScaleCheckTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	checked := map[string]error{}
	var ids []string
	for _, p := range reg.Providers {
		if len(reg.DatasetsOf(p.ID)) > 0 {
			ids = append(ids, p.ID)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		base := baseURLs[id]
		if base == "" {
			base = baseURLs["*"]
		}
		if base == "" {
			return fmt.Errorf("rate scale %g: provider %s would be called at its real base URL %s at %g× its declared rates; a rate scale other than 1 is only for a simulator (--base-url) running at the same scale",
				scale, id, reg.Provider(id).BaseURL, scale)
		}
		err, done := checked[base]
		if !done {
			err = checkSimulator(ctx, hc, base, scale)
			checked[base] = err
		}
		if err != nil {
			return fmt.Errorf("rate scale %g: provider %s: %w", scale, id, err)
		}
	}
	return nil
}

// checkSimulator asks the base URL's simulator control endpoint for its
// rate scale.
func checkSimulator(ctx context.Context, hc *http.Client, base string, scale float64) error {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("base URL %q is not an http(s) URL", base)
	}
	stats := u.Scheme + "://" + u.Host + "/_sim/stats"
	ctx, cancel := context.WithTimeout(ctx, ScaleCheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, stats, nil)
	if err != nil {
		return fmt.Errorf("asking %s for its rate scale: %w", stats, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("base URL %s is not a simulator: asking %s for its rate scale: %w", base, stats, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("base URL %s is not a simulator: %s answered HTTP %d", base, stats, resp.StatusCode)
	}
	var s struct {
		RateScale *float64 `json:"rate_scale"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&s); err != nil || s.RateScale == nil {
		return fmt.Errorf("base URL %s is not a simulator: %s did not answer with a rate_scale", base, stats)
	}
	if got := *s.RateScale; math.Abs(got-scale) > 1e-9*scale {
		return fmt.Errorf("the simulator at %s runs at rate scale %g, not %g: start both with the same --rate-scale", base, got, scale)
	}
	return nil
}
