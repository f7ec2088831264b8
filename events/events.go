// Package events records Sluice's operational events — a scope backing off
// after a provider's rate-limit answer, a quota exhausted, a token
// refreshed — durably in Temporal itself: a singleton workflow
// (workflow id sluice-ops-events) receives them as signals and keeps the
// most recent ones in its state, visible in the Web UI and readable with
// `sluice events` or a query. They are operations, never provider outages.
package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/internal/kind"
	"github.com/sluicehq/sluice/watch"
)

// Event kinds.
const (
	KindBackoff        = "ratelimit.backoff"
	KindQuotaExhausted = "quota.exhausted"
	KindTokenRefreshed = "token.refreshed"
)

// The events workflow's name, signal, query and id.
const (
	WorkflowName = "OpsEvents"
	WorkflowID   = "sluice-ops-events"
	Signal       = "event"
	Query        = "events"
	// Keep is how many recent events the workflow holds.
	Keep = 1000
)

// Event is one operational event: the record the watch store keeps
// (watch.Event), sent here through Temporal. Fields never carry secrets.
type Event = watch.Event

// Recorder sends events to the events workflow, and to a second
// destination when one is set (Also: the watch store).
type Recorder struct {
	tc        client.Client
	taskQueue string
	also      func(context.Context, Event) error
}

// NewRecorder returns a recorder over a Temporal client; events workflows
// run on taskQueue.
func NewRecorder(tc client.Client, taskQueue string) *Recorder {
	return &Recorder{tc: tc, taskQueue: taskQueue}
}

// Also makes the recorder pass every event to also as well (the watch
// store's AddEvents), whether or not the events workflow took it, and
// returns it.
func (r *Recorder) Also(also func(context.Context, Event) error) *Recorder {
	r.also = also
	return r
}

// Record signals an event, starting the events workflow if needed, and
// passes it to the Also destination.
func (r *Recorder) Record(ctx context.Context, e Event) error {
	if r == nil {
		return nil
	}
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	var errs []error
	if r.tc != nil {
		_, err := r.tc.SignalWithStartWorkflow(ctx, WorkflowID, Signal, e, client.StartWorkflowOptions{
			ID:                       WorkflowID,
			TaskQueue:                r.taskQueue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			TypedSearchAttributes:    kind.Of(kind.Events),
		}, WorkflowName, []Event(nil))
		if err != nil {
			errs = append(errs, fmt.Errorf("recording %s event: %w", e.Kind, err))
		}
	}
	if r.also != nil {
		if err := r.also(ctx, e); err != nil {
			errs = append(errs, fmt.Errorf("recording %s event in the watch store: %w", e.Kind, err))
		}
	}
	return errors.Join(errs...)
}

// List returns the recorded events, oldest first. Before the first event
// the events workflow does not exist: that is no events (an empty list and
// no error), not a failure.
func List(ctx context.Context, tc client.Client) ([]Event, error) {
	v, err := tc.QueryWorkflow(ctx, WorkflowID, "", Query)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("querying events: %w", err)
	}
	var out []Event
	if err := v.Get(&out); err != nil {
		return nil, fmt.Errorf("decoding events: %w", err)
	}
	return out, nil
}
