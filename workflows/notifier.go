package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/internal/deployment"
	"github.com/sluicehq/sluice/notify"
)

// The notifier workflow's name, id, signal and query.
const (
	NotifierName       = "Notifier"
	NotifierWorkflowID = "sluice-notifier"
	// NotifierSignal carries a []notify.Change.
	NotifierSignal = "changes"
	// NotifierStateQuery returns a NotifierStatus.
	NotifierStateQuery = "state"
)

// notifierBatchesPerRun bounds a notifier run's history: after this many
// batches it continues as new (a variable for tests).
var notifierBatchesPerRun = 200

// The notifier's bounds.
const (
	// notifierSeen is how many recent change keys the notifier
	// remembers to drop a change signalled twice.
	notifierSeen = 2000
	// deliveryRetryMax caps the backoff between two attempts of a
	// delivery, and deliveryTimeout bounds its attempts altogether: a
	// receiver down ten minutes, or a day, gets the notification within a
	// minute of its return.
	deliveryRetryMax = time.Minute
	deliveryTimeout  = 24 * time.Hour
	// deliveryAttempts is more attempts than a day holds at one a
	// minute: the day bounds them, not the count. (Zero, unlimited, is
	// ten in the SDK's test environment.)
	deliveryAttempts int32 = 2000
	// notifierDrainWait is how long a run about to continue as new waits
	// for its running deliveries before it cancels them.
	notifierDrainWait = 2 * time.Minute
)

// NotifierInput configures the notifier and carries its state across
// continue-as-new.
type NotifierInput struct {
	// GroupWindow is how long changes are collected into one batch (0:
	// notify.DefaultGroupWindow).
	GroupWindow time.Duration `json:"group_window,omitempty"`
	// Pending are changes received and not yet grouped.
	Pending []notify.Change `json:"pending,omitempty"`
	// Outbox are deliveries not yet acknowledged.
	Outbox []activities.NotifyDelivery `json:"outbox,omitempty"`
	// Seen are the keys of the most recent changes, oldest first.
	Seen []string `json:"seen,omitempty"`
	// Delivered and Failed count deliveries over every run; Runs the
	// runs before.
	Delivered int64 `json:"delivered,omitempty"`
	Failed    int64 `json:"failed,omitempty"`
	Runs      int   `json:"runs,omitempty"`
}

// NotifierStatus is what NotifierStateQuery returns.
type NotifierStatus struct {
	Pending   int   `json:"pending"`
	Outbox    int   `json:"outbox"`
	Delivered int64 `json:"delivered"`
	Failed    int64 `json:"failed"`
	Run       int   `json:"run"`
	// Duplicates counts the changes this run dropped as seen already.
	Duplicates int64 `json:"duplicates,omitempty"`
	// LastError is why the last failed delivery failed.
	LastError string `json:"last_error,omitempty"`
}

// Notifier is the singleton that tells people (workflow id
// NotifierWorkflowID; docs/notifications.md). Probes pass it the changes
// they confirm as NotifierSignal signals (NotifierClient); it drops a
// change it has seen (by key), collects the rest for GroupWindow after
// the first, groups them — one notification per provider
// (notify.Group) — and delivers each to every sink the workers configure
// (the NotifySinks activity), one NotifyDeliver activity per sink and
// notification, in order per sink, retried with a backoff capped at a
// minute for a day: a receiver down ten minutes gets every notification,
// in order, once it is back. Deliveries are
// at least once; the Idempotency-Key (the notification's id, stable
// across attempts) lets a receiver keep exactly one. It continues as new
// every notifierBatchesPerRun batches, when the server suggests it or a
// new version waits, carrying its pending changes and undelivered
// notifications (their activities cancelled and started again).
func Notifier(ctx workflow.Context, in NotifierInput) error {
	window := in.GroupWindow
	if window <= 0 {
		window = notify.DefaultGroupWindow
	}
	ch := workflow.GetSignalChannel(ctx, NotifierSignal)
	pending, outbox, seenOrder := in.Pending, in.Outbox, in.Seen
	seen := make(map[string]bool, len(seenOrder))
	for _, k := range seenOrder {
		seen[k] = true
	}
	st := NotifierStatus{Delivered: in.Delivered, Failed: in.Failed, Run: in.Runs + 1}
	if err := workflow.SetQueryHandler(ctx, NotifierStateQuery, func() (NotifierStatus, error) {
		s := st
		s.Pending, s.Outbox = len(pending), len(outbox)
		return s, nil
	}); err != nil {
		return err
	}
	add := func(cs []notify.Change) {
		for _, c := range cs {
			if c.Key == "" || seen[c.Key] {
				st.Duplicates++
				continue
			}
			seen[c.Key] = true
			seenOrder = append(seenOrder, c.Key)
			pending = append(pending, c)
		}
		if n := len(seenOrder) - notifierSeen; n > 0 {
			for _, k := range seenOrder[:n] {
				delete(seen, k)
			}
			seenOrder = append([]string(nil), seenOrder[n:]...)
		}
	}
	drain := func() {
		for {
			var cs []notify.Change
			if !ch.ReceiveAsync(&cs) {
				return
			}
			add(cs)
		}
	}

	// One worker a sink delivers its part of the outbox in order: a
	// receiver never sees a recovery before the outage it ends, and one
	// that is down holds up only itself.
	var a *activities.Activities
	dctx, cancelDeliveries := workflow.WithCancel(ctx)
	workers, running := map[string]bool{}, 0
	next := func(sink string) int {
		for i, o := range outbox {
			if o.Sink == sink {
				return i
			}
		}
		return -1
	}
	startWorker := func(sink string) {
		if workers[sink] {
			return
		}
		workers[sink] = true
		running++
		workflow.Go(dctx, func(gctx workflow.Context) {
			defer func() { running-- }()
			actCtx := workflow.WithActivityOptions(gctx, workflow.ActivityOptions{
				ScheduleToCloseTimeout: deliveryTimeout,
				StartToCloseTimeout:    time.Minute,
				RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: deliveryRetryMax,
					MaximumAttempts: deliveryAttempts, NonRetryableErrorTypes: []string{activities.ErrTypeNoSink}},
			})
			for {
				if err := workflow.Await(gctx, func() bool { return next(sink) >= 0 }); err != nil {
					return // cancelled for continue-as-new
				}
				d := outbox[next(sink)]
				err := workflow.ExecuteActivity(actCtx, a.NotifyDeliver, d).Get(gctx, nil)
				if err != nil && gctx.Err() != nil {
					return // cancelled for continue-as-new: it stays in the outbox
				}
				if i := next(sink); i >= 0 {
					outbox = append(outbox[:i:i], outbox[i+1:]...)
				}
				if err != nil {
					st.Failed++
					st.LastError = rootMessage(err)
					workflow.GetLogger(ctx).Error("notification not delivered", "sink", d.Sink, "id", d.Notification.ID, "err", err)
					continue
				}
				st.Delivered++
			}
		})
	}
	for _, d := range outbox {
		startWorker(d.Sink)
	}

	for batch := 0; batch < notifierBatchesPerRun && !deployment.Suggested(ctx); batch++ {
		if err := workflow.Await(ctx, func() bool { return ch.Len() > 0 || len(pending) > 0 || deployment.Suggested(ctx) }); err != nil {
			return err
		}
		drain()
		if len(pending) == 0 {
			break // a new version or a long history: continue as new
		}
		// Collect what else comes within the window: the other datasets
		// of a provider that went down together.
		if err := workflow.Sleep(ctx, window); err != nil {
			return err
		}
		drain()
		notes := notify.Group(pending)
		var sinks []string
		sinksCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: deliveryRetryMax},
		})
		if err := workflow.ExecuteActivity(sinksCtx, a.NotifySinks).Get(ctx, &sinks); err != nil {
			return fmt.Errorf("listing notification sinks: %w", err)
		}
		pending = nil
		if len(sinks) == 0 {
			workflow.GetLogger(ctx).Warn("no notification sink configured: notifications dropped", "notifications", len(notes))
		}
		for _, n := range notes {
			for _, s := range sinks {
				d := activities.NotifyDelivery{Sink: s, Notification: n}
				outbox = append(outbox, d)
				startWorker(s)
			}
		}
	}

	// Continue as new: give the deliveries running a moment to finish,
	// stop those still retrying (the next run starts them again), and
	// keep every signal received.
	if _, err := workflow.AwaitWithTimeout(ctx, notifierDrainWait, func() bool { return len(outbox) == 0 }); err != nil {
		return err
	}
	cancelDeliveries()
	if err := workflow.Await(ctx, func() bool { return running == 0 && workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	drain()
	return deployment.ContinueAsNew(ctx, Notifier, NotifierInput{
		GroupWindow: in.GroupWindow, Pending: pending, Outbox: outbox, Seen: seenOrder,
		Delivered: st.Delivered, Failed: st.Failed, Runs: st.Run,
	})
}

// NotifierClient passes notified changes to the notifier workflow
// (activities.Notifier), starting it when it is not running.
type NotifierClient struct {
	tc          client.Client
	taskQueue   string
	groupWindow time.Duration
}

// NewNotifierClient returns a client signalling the notifier on
// taskQueue; a notifier it starts groups changes for groupWindow.
func NewNotifierClient(tc client.Client, taskQueue string, groupWindow time.Duration) *NotifierClient {
	return &NotifierClient{tc: tc, taskQueue: taskQueue, groupWindow: groupWindow}
}

// Notify signals changes to the notifier, starting it if needed.
func (c *NotifierClient) Notify(ctx context.Context, changes []notify.Change) error {
	if c == nil || c.tc == nil {
		return errors.New("notifying changes: no Temporal client")
	}
	_, err := c.tc.SignalWithStartWorkflow(ctx, NotifierWorkflowID, NotifierSignal, changes, client.StartWorkflowOptions{
		ID:                       NotifierWorkflowID,
		TaskQueue:                c.taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, NotifierName, NotifierInput{GroupWindow: c.groupWindow})
	if err != nil {
		return fmt.Errorf("signalling the notifier: %w", err)
	}
	return nil
}
