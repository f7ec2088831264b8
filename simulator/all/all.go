// Package all links every simulated provider into a program, so that
// simulator.New serves each of them:
//
//	import _ "github.com/sluicehq/sluice/simulator/all"
//
// Handler builds such a simulator for a connector test's conformance
// suite (connectortest.Simulator), which must not import the simulator.
package all

import (
	"net/http"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"

	// Each registers itself with simulator.Register.
	_ "github.com/sluicehq/sluice/simulator/datago"
	_ "github.com/sluicehq/sluice/simulator/ecos"
	_ "github.com/sluicehq/sluice/simulator/fred"
	_ "github.com/sluicehq/sluice/simulator/kis"
	_ "github.com/sluicehq/sluice/simulator/upbit"
)

// Handler returns the handler of a simulator of every linked provider
// serving reg, seed 1, on the clock now (nil: the wall clock), every rate
// multiplied by rateScale (0: 1).
func Handler(reg *registry.Registry, now func() time.Time, rateScale float64) (http.Handler, error) {
	sim, err := simulator.New(simulator.Options{Registry: reg, Seed: 1, Now: now, RateScale: rateScale})
	if err != nil {
		return nil, err
	}
	return sim.Handler(), nil
}
