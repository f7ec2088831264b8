package workflows

import (
	"context"
	"errors"
	"fmt"
	"sort"
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
	// notify.DefaultGroupWindow): since the first change, or (runs with
	// "notifier-provider-groups") since a provider's latest change, its
	// changes being sent once none came for GroupWindow.
	GroupWindow time.Duration `json:"group_window,omitempty"`
	// GroupMax bounds how long a provider's changes are held while more
	// keep coming (0: notify.DefaultGroupMax; never below GroupWindow).
	GroupMax time.Duration `json:"group_max,omitempty"`
	// Pending are changes received and not yet grouped.
	Pending []notify.Change `json:"pending,omitempty"`
	// Outbox are deliveries not yet acknowledged.
	Outbox []activities.NotifyDelivery `json:"outbox,omitempty"`
	// Seen are the keys of the most recent changes, oldest first.
	Seen []string `json:"seen,omitempty"`
	// Groups are the providers' groups still held (their changes in
	// Pending), with when their first and latest changes came, so that a
	// group's window and GroupMax run on across continue-as-new (runs
	// with "notifier-provider-groups" 3).
	Groups []NotifierGroup `json:"groups,omitempty"`
	// Delivered and Failed count deliveries over every run; Runs the
	// runs before.
	Delivered int64 `json:"delivered,omitempty"`
	Failed    int64 `json:"failed,omitempty"`
	Runs      int   `json:"runs,omitempty"`
}

// NotifierGroup is a provider's group of changes held by the notifier:
// when its first change came (GroupMax counts from it) and its latest
// (the group window counts from it), on the workflow clock.
type NotifierGroup struct {
	Provider string    `json:"provider"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
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
// (notify.GroupProviders: the provider's own down when all its watched
// datasets went down) — and delivers each to every sink the workers configure
// (the NotifySinks activity), one NotifyDeliver activity per sink and
// notification, in order per sink, retried with a backoff capped at a
// minute for a day: a receiver down ten minutes gets every notification,
// in order, once it is back. Deliveries are
// at least once; the Idempotency-Key (the notification's id, stable
// across attempts) lets a receiver keep exactly one. It continues as new
// every notifierBatchesPerRun batches, when the server suggests it or a
// new version waits, carrying its pending changes, the groups they are
// held in (with their first and latest change times) and undelivered
// notifications (their activities cancelled and started again).
func Notifier(ctx workflow.Context, in NotifierInput) error {
	// Runs recorded before it batched every provider's changes once the
	// window after the first had passed; now each provider has its own
	// group, sent once it has been quiet for the window (or held for
	// GroupMax): the datasets of a provider whose first probes are spread
	// over the interval are confirmed down minutes apart, and stay one
	// message.
	//
	// Version 2: a group in which every dataset of a provider the watch
	// probes went down (or came back up) is the provider's own down (or
	// recovery), one line instead of a line a dataset
	// (notify.GroupProviders). Version 3: the groups still held cross
	// continue-as-new with their first and latest change times
	// (NotifierInput.Groups), so a group's window and GroupMax hold across
	// it; before, a carried group started again at the new run's start.
	groups := workflow.GetVersion(ctx, notifierGroupsVersion, workflow.DefaultVersion, 3)
	window := in.GroupWindow
	if window <= 0 {
		window = notify.DefaultGroupWindow
	}
	hold := max(in.GroupMax, window)
	if in.GroupMax <= 0 {
		hold = max(notify.DefaultGroupMax, window)
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
	var arrived []string // providers with a change since the last look
	add := func(cs []notify.Change) {
		for _, c := range cs {
			if c.Key == "" || seen[c.Key] {
				st.Duplicates++
				continue
			}
			seen[c.Key] = true
			seenOrder = append(seenOrder, c.Key)
			pending = append(pending, c)
			arrived = append(arrived, c.Provider)
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

	sinksCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: deliveryRetryMax},
	})
	// send groups changes into notifications and puts them in the outbox,
	// one delivery per sink.
	send := func(changes []notify.Change) error {
		notes := notify.Group(changes)
		if groups >= 2 {
			notes = notify.GroupProviders(changes)
		}
		var sinks []string
		if err := workflow.ExecuteActivity(sinksCtx, a.NotifySinks).Get(ctx, &sinks); err != nil {
			return fmt.Errorf("listing notification sinks: %w", err)
		}
		if len(sinks) == 0 {
			workflow.GetLogger(ctx).Warn("no notification sink configured: notifications dropped", "notifications", len(notes))
		}
		for _, n := range notes {
			for _, s := range sinks {
				outbox = append(outbox, activities.NotifyDelivery{Sink: s, Notification: n})
				startWorker(s)
			}
		}
		return nil
	}
	var carried []NotifierGroup
	if groups >= 3 {
		carried = in.Groups
	}
	held := func() []NotifierGroup { return nil }
	if groups >= 1 {
		var err error
		if held, err = notifyByProvider(ctx, ch, window, hold, carried, &pending, &arrived, drain, send); err != nil {
			return err
		}
	}
	for batch := 0; groups == workflow.DefaultVersion && batch < notifierBatchesPerRun && !deployment.Suggested(ctx); batch++ {
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
		batchChanges := pending
		pending = nil
		if err := send(batchChanges); err != nil {
			return err
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
	cont := NotifierInput{
		GroupWindow: in.GroupWindow, GroupMax: in.GroupMax, Pending: pending, Outbox: outbox, Seen: seenOrder,
		Delivered: st.Delivered, Failed: st.Failed, Runs: st.Run,
	}
	if groups >= 3 {
		cont.Groups = held()
	}
	return deployment.ContinueAsNew(ctx, Notifier, cont)
}

// notifierGroupsVersion is the workflow.GetVersion change id of the
// per-provider groups (version 1), the provider's own down and recovery
// (version 2) and the groups carried across continue-as-new (version 3).
const notifierGroupsVersion = "notifier-provider-groups"

// notifyByProvider is the notifier's loop from "notifier-provider-groups"
// on: each provider's changes are held until none of its changes has come
// for window, or hold has passed since its first, then sent as one
// notification; other providers' groups go on. carried are the groups
// the last run held (their changes in *pending), which go on with their
// times. drain adds the changes signalled to *pending (and their
// providers to *arrived); what is still held in it when this returns —
// after notifierBatchesPerRun sends, or when the server suggests
// continuing as new — is carried to the next run, and the function it
// returns gives the groups held then (those of changes that came since
// starting now), for the next run's input.
func notifyByProvider(ctx workflow.Context, ch workflow.ReceiveChannel, window, hold time.Duration, carried []NotifierGroup,
	pending *[]notify.Change, arrived *[]string, drain func(), send func([]notify.Change) error) (func() []NotifierGroup, error) {
	type group struct{ first, last time.Time }
	// groups by provider, and providers in order: no map is ranged over.
	groups := map[string]*group{}
	var providers []string
	waiting := map[string]bool{} // providers with pending changes
	for _, c := range *pending {
		waiting[c.Provider] = true
	}
	for _, g := range carried {
		if waiting[g.Provider] && groups[g.Provider] == nil && !g.First.IsZero() && !g.Last.Before(g.First) {
			groups[g.Provider] = &group{first: g.First, last: g.Last}
			providers = append(providers, g.Provider)
		}
	}
	stamp := func() {
		now := workflow.Now(ctx)
		for _, c := range *pending {
			if groups[c.Provider] == nil {
				*arrived = append(*arrived, c.Provider)
			}
		}
		for _, p := range *arrived {
			g := groups[p]
			if g == nil {
				g = &group{first: now}
				groups[p] = g
				providers = append(providers, p)
			}
			g.last = now
		}
		*arrived = (*arrived)[:0]
		sort.Strings(providers)
	}
	open := func() []NotifierGroup {
		drain()
		stamp()
		out := make([]NotifierGroup, 0, len(providers))
		for _, p := range providers {
			out = append(out, NotifierGroup{Provider: p, First: groups[p].first, Last: groups[p].last})
		}
		return out
	}
	drain()
	stamp() // pending carried from the last run without a carried group start theirs now
	for sent := 0; sent < notifierBatchesPerRun && !deployment.Suggested(ctx); {
		now := workflow.Now(ctx)
		due := map[string]bool{}
		var next time.Time
		for _, p := range providers {
			g := groups[p]
			at := g.last.Add(window)
			if end := g.first.Add(hold); end.Before(at) {
				at = end
			}
			if !at.After(now) {
				due[p] = true
			} else if next.IsZero() || at.Before(next) {
				next = at
			}
		}
		if len(due) > 0 {
			var out, keep []notify.Change
			for _, c := range *pending {
				if due[c.Provider] {
					out = append(out, c)
				} else {
					keep = append(keep, c)
				}
			}
			*pending = keep
			var left []string
			for _, p := range providers {
				if due[p] {
					delete(groups, p)
				} else {
					left = append(left, p)
				}
			}
			providers = left
			if err := send(out); err != nil {
				return open, err
			}
			sent++
			continue
		}
		woken := func() bool { return ch.Len() > 0 || deployment.Suggested(ctx) }
		if next.IsZero() {
			if err := workflow.Await(ctx, woken); err != nil {
				return open, err
			}
		} else if _, err := workflow.AwaitWithTimeout(ctx, next.Sub(now), woken); err != nil {
			return open, err
		}
		drain()
		stamp()
	}
	return open, nil
}

// NotifierClient passes notified changes to the notifier workflow
// (activities.Notifier), starting it when it is not running.
type NotifierClient struct {
	tc          client.Client
	taskQueue   string
	groupWindow time.Duration
	groupMax    time.Duration
}

// NewNotifierClient returns a client signalling the notifier on
// taskQueue; a notifier it starts sends a provider's changes once none
// came for groupWindow, or groupMax after the first (0: the defaults,
// notify.DefaultGroupWindow and notify.DefaultGroupMax).
func NewNotifierClient(tc client.Client, taskQueue string, groupWindow, groupMax time.Duration) *NotifierClient {
	return &NotifierClient{tc: tc, taskQueue: taskQueue, groupWindow: groupWindow, groupMax: groupMax}
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
	}, NotifierName, NotifierInput{GroupWindow: c.groupWindow, GroupMax: c.groupMax})
	if err != nil {
		return fmt.Errorf("signalling the notifier: %w", err)
	}
	return nil
}
