package events

import (
	"go.temporal.io/sdk/workflow"
)

// eventsPerRun bounds the events workflow's history before it continues
// as new with the events it keeps.
const eventsPerRun = 2000

// Workflow is the events workflow (registered as WorkflowName, id
// WorkflowID): it keeps Sluice's recent operational events (Keep of them)
// for the status page, the CLI and the Web UI. Events arrive as signals.
func Workflow(ctx workflow.Context, kept []Event) error {
	ch := workflow.GetSignalChannel(ctx, Signal)
	if err := workflow.SetQueryHandler(ctx, Query, func() ([]Event, error) { return kept, nil }); err != nil {
		return err
	}
	for n := 0; n < eventsPerRun && !workflow.GetInfo(ctx).GetContinueAsNewSuggested(); n++ {
		var e Event
		ch.Receive(ctx, &e)
		kept = append(kept, e)
		if len(kept) > Keep {
			kept = append(kept[:0], kept[len(kept)-Keep:]...)
		}
	}
	// Drain what is buffered so no signal is lost across continue-as-new.
	for {
		var e Event
		if !ch.ReceiveAsync(&e) {
			break
		}
		kept = append(kept, e)
	}
	if len(kept) > Keep {
		kept = kept[len(kept)-Keep:]
	}
	return workflow.NewContinueAsNewError(ctx, WorkflowName, kept)
}
