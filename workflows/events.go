package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/events"
)

// eventsPerRun bounds the events workflow's history before it continues
// as new with the events it keeps.
const eventsPerRun = 2000

// OpsEvents keeps Sluice's recent operational events (events.Keep of them)
// for the status page, the CLI and the Web UI. Events arrive as signals.
func OpsEvents(ctx workflow.Context, kept []events.Event) error {
	ch := workflow.GetSignalChannel(ctx, events.Signal)
	if err := workflow.SetQueryHandler(ctx, events.Query, func() ([]events.Event, error) { return kept, nil }); err != nil {
		return err
	}
	for n := 0; n < eventsPerRun && !workflow.GetInfo(ctx).GetContinueAsNewSuggested(); n++ {
		var e events.Event
		ch.Receive(ctx, &e)
		kept = append(kept, e)
		if len(kept) > events.Keep {
			kept = append(kept[:0], kept[len(kept)-events.Keep:]...)
		}
	}
	// Drain what is buffered so no signal is lost across continue-as-new.
	for {
		var e events.Event
		if !ch.ReceiveAsync(&e) {
			break
		}
		kept = append(kept, e)
	}
	if len(kept) > events.Keep {
		kept = kept[len(kept)-events.Keep:]
	}
	return workflow.NewContinueAsNewError(ctx, OpsEvents, kept)
}
