package schedules

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/sluicehq/sluice/internal/kind"
	"github.com/sluicehq/sluice/workflows"
)

// syncNote is the note a schedule Sluice creates starts with.
const syncNote = "synced from the registry by sluice schedules sync"

// Temporal is the Namespace of a Temporal client's namespace.
func Temporal(c client.Client) Namespace { return temporalNS{c: c.ScheduleClient()} }

type temporalNS struct{ c client.ScheduleClient }

func (t temporalNS) IDs(ctx context.Context) ([]string, error) {
	it, err := t.c.List(ctx, client.ScheduleListOptions{PageSize: 200})
	if err != nil {
		return nil, err
	}
	var ids []string
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		ids = append(ids, e.ID)
	}
	return ids, nil
}

func (t temporalNS) Describe(ctx context.Context, id string) (*Have, error) {
	d, err := t.c.GetHandle(ctx, id).Describe(ctx)
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil, nil
		}
		return nil, fmt.Errorf("describing schedule %s: %w", id, err)
	}
	return haveOf(id, d), nil
}

// haveOf reads a schedule's description.
func haveOf(id string, d *client.ScheduleDescription) *Have {
	h := &Have{ID: id, Owned: owned(d.Memo)}
	if s := d.Schedule.State; s != nil {
		h.Paused, h.Note = s.Paused, s.Note
	}
	if d.Schedule.Spec != nil {
		h.Spec = *d.Schedule.Spec
	}
	if p := d.Schedule.Policy; p != nil {
		h.Overlap, h.CatchupWindow = p.Overlap, p.CatchupWindow
	}
	if a, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction); ok {
		h.Workflow, _ = a.Workflow.(string)
		h.ActionID, h.TaskQueue, h.Summary = a.ID, a.TaskQueue, a.StaticSummary
		if len(a.Args) == 1 {
			if p, ok := a.Args[0].(*commonpb.Payload); ok {
				var in workflows.DailyIngestInput
				if converter.GetDefaultDataConverter().FromPayload(p, &in) == nil {
					h.Input = &in
				}
			}
		}
	}
	return h
}

// owned reports whether a schedule's memo marks it as Sluice's.
func owned(m *commonpb.Memo) bool {
	p := m.GetFields()[MemoOwner]
	if p == nil {
		return false
	}
	var v string
	return converter.GetDefaultDataConverter().FromPayload(p, &v) == nil && v == OwnerName
}

func action(w Want) *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{
		ID:            w.ID,
		Workflow:      workflows.DailyIngestName,
		Args:          []any{w.Input()},
		TaskQueue:     w.TaskQueue,
		StaticSummary: w.Summary(),
		// Each run the schedule starts is a daily run.
		TypedSearchAttributes: kind.Of(kind.Daily),
	}
}

func (t temporalNS) Create(ctx context.Context, w Want) error {
	_, err := t.c.Create(ctx, client.ScheduleOptions{
		ID:            w.ID,
		Spec:          w.Spec(),
		Action:        action(w),
		Overlap:       Overlap,
		CatchupWindow: w.CatchupWindow,
		Note:          syncNote,
		Memo:          map[string]any{MemoOwner: OwnerName},
	})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("creating schedule %s: it was created since the plan was made; sync again", w.ID)
	}
	if err != nil {
		return fmt.Errorf("creating schedule %s: %w", w.ID, err)
	}
	return nil
}

func (t temporalNS) Update(ctx context.Context, w Want) error {
	err := t.c.GetHandle(ctx, w.ID).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			if !owned(in.Description.Memo) {
				return nil, fmt.Errorf("schedule %s is not Sluice's (no memo %s=%s): left alone", w.ID, MemoOwner, OwnerName)
			}
			s := in.Description.Schedule
			spec := w.Spec()
			s.Spec = &spec
			s.Action = action(w)
			s.Policy = &client.SchedulePolicies{Overlap: Overlap, CatchupWindow: w.CatchupWindow}
			// s.State (paused, note, remaining actions) stays as it is.
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("updating schedule %s: %w", w.ID, err)
	}
	return nil
}

func (t temporalNS) Delete(ctx context.Context, id string) error {
	h, err := t.Describe(ctx, id)
	if err != nil {
		return err
	}
	if h == nil {
		return nil // gone already
	}
	if !h.Owned {
		return fmt.Errorf("schedule %s is not Sluice's: left alone", id)
	}
	if err := t.c.GetHandle(ctx, id).Delete(ctx); err != nil {
		return fmt.Errorf("deleting schedule %s: %w", id, err)
	}
	return nil
}

// Entry is one schedule Sluice owns, for `sluice schedules list`.
type Entry struct {
	Have
	// Next are the next nominal times; Recent the latest runs (nominal
	// time and workflow id), oldest first.
	Next   []time.Time
	Recent []Run
}

// Run is one action a schedule took.
type Run struct {
	Nominal    time.Time
	WorkflowID string
}

// List returns the schedules Sluice owns in the namespace, by id.
func List(ctx context.Context, c client.Client) ([]Entry, error) {
	ns := temporalNS{c: c.ScheduleClient()}
	ids, err := ns.IDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	var out []Entry
	for _, id := range ids {
		d, err := ns.c.GetHandle(ctx, id).Describe(ctx)
		if err != nil {
			var nf *serviceerror.NotFound
			if errors.As(err, &nf) {
				continue // deleted since the listing
			}
			return nil, fmt.Errorf("describing schedule %s: %w", id, err)
		}
		h := haveOf(id, d)
		if !h.Owned {
			continue
		}
		e := Entry{Have: *h, Next: d.Info.NextActionTimes}
		for _, a := range d.Info.RecentActions {
			r := Run{Nominal: a.ScheduleTime}
			if a.StartWorkflowResult != nil {
				r.WorkflowID = a.StartWorkflowResult.WorkflowID
			}
			e.Recent = append(e.Recent, r)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// handle returns the handle of a schedule Sluice owns, or an error saying
// it is not there or not Sluice's.
func handle(ctx context.Context, c client.Client, id string) (client.ScheduleHandle, error) {
	ns := temporalNS{c: c.ScheduleClient()}
	h, err := ns.Describe(ctx, id)
	switch {
	case err != nil:
		return nil, err
	case h == nil:
		return nil, fmt.Errorf("no schedule %s in the namespace (sluice schedules list shows Sluice's)", id)
	case !h.Owned:
		return nil, fmt.Errorf("schedule %s is not Sluice's (no memo %s=%s): use the temporal CLI for it", id, MemoOwner, OwnerName)
	}
	return ns.c.GetHandle(ctx, id), nil
}

// Pause pauses a schedule Sluice owns, with a note saying why.
func Pause(ctx context.Context, c client.Client, id, note string) error {
	h, err := handle(ctx, c, id)
	if err != nil {
		return err
	}
	if err := h.Pause(ctx, client.SchedulePauseOptions{Note: note}); err != nil {
		return fmt.Errorf("pausing schedule %s: %w", id, err)
	}
	return nil
}

// Unpause resumes a schedule Sluice owns. Runs missed while it was
// paused are not taken.
func Unpause(ctx context.Context, c client.Client, id, note string) error {
	h, err := handle(ctx, c, id)
	if err != nil {
		return err
	}
	if err := h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: note}); err != nil {
		return fmt.Errorf("unpausing schedule %s: %w", id, err)
	}
	return nil
}

// Trigger runs a schedule Sluice owns now, as if its time had come (its
// nominal time is now: the run ingests yesterday in the provider's
// calendar), under its overlap policy.
func Trigger(ctx context.Context, c client.Client, id string) error {
	h, err := handle(ctx, c, id)
	if err != nil {
		return err
	}
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		return fmt.Errorf("triggering schedule %s: %w", id, err)
	}
	return nil
}
