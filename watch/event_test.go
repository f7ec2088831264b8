package watch_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/watch"
)

// TestEventConvertsFromEvents: watch.Event has exactly events.Event's
// fields, so an operational event recorded in Temporal goes to the store
// as watch.Event(e). This fails to compile when the two drift apart.
func TestEventConvertsFromEvents(t *testing.T) {
	e := events.Event{Kind: events.KindBackoff, At: time.Now(), Scope: "kis/key", Message: "m", Attrs: map[string]string{"factor": "0.5"}}
	w := watch.Event(e)
	if w.Kind != e.Kind || w.Scope != e.Scope || w.Attrs["factor"] != "0.5" {
		t.Errorf("converted %+v", w)
	}
	if err := w.Validate(); err != nil {
		t.Error(err)
	}
}
