//go:build linux

package e2e

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/simulator/synth"
)

var (
	datesMu   sync.Mutex
	datesUsed = map[synth.Day]bool{}
)

// logicalDate returns a date no other test of this run uses, at least a
// week back (every provider has published it) and open on the Korean and
// U.S. calendars, so that every daily series of the simulator has data.
func logicalDate() string {
	datesMu.Lock()
	defer datesMu.Unlock()
	d := synth.DayOf(time.Now().UTC()) - 7
	for datesUsed[d] || !synth.KRX.Open(d) || !synth.US.Open(d) {
		d--
	}
	datesUsed[d] = true
	return d.Time(time.UTC).Format(time.DateOnly)
}
