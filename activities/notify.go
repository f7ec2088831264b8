package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/sluicehq/sluice/notify"
	"github.com/sluicehq/sluice/watch"
)

// ErrTypeNoSink is the error type of a delivery to a sink the worker's
// notifications configuration does not have: not retried.
const ErrTypeNoSink = "no_sink"

// Notifier takes the changes to notify to the notifier workflow
// (workflows.NotifierClient: a signal, starting it when needed).
type Notifier interface {
	Notify(ctx context.Context, changes []notify.Change) error
}

// NotifyDelivery is one notification for one sink: what a NotifyDeliver
// activity delivers. It names the sink; the sink's URL and key stay in
// the worker.
type NotifyDelivery struct {
	Sink         string              `json:"sink"`
	Notification notify.Notification `json:"notification"`
}

// NotifySinks returns the names of the worker's notification sinks, in
// the configured order.
func (a *Activities) NotifySinks(ctx context.Context) ([]string, error) {
	return a.cfg.Notify.Names(), nil
}

// NotifyDeliver sends one notification to one sink once; only a 2xx
// answer is a delivery. Its retry policy (workflows.Notifier) retries it
// until the receiver acknowledges it; the receiver dedupes by the
// Idempotency-Key header.
func (a *Activities) NotifyDeliver(ctx context.Context, in NotifyDelivery) error {
	sink := a.cfg.Notify.Sink(in.Sink)
	if sink == nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("notification sink %q is not configured on this worker", in.Sink), ErrTypeNoSink, nil)
	}
	if err := a.sender.Send(ctx, *sink, in.Notification); err != nil {
		a.log.Warn("delivering a notification", "sink", in.Sink, "id", in.Notification.ID, "err", err)
		return err
	}
	a.log.Info("notification delivered", "sink", in.Sink, "id", in.Notification.ID, "title", in.Notification.Title)
	return nil
}

// maintenanceWindows returns the maintenance windows that end after
// since: the registry's and those `sluice maintenance add` recorded in
// the watch store.
func (a *Activities) maintenanceWindows(ctx context.Context, since time.Time) ([]notify.Window, error) {
	out := notify.RegistryWindows(a.cfg.Registry)
	if a.cfg.Watch == nil {
		return out, nil
	}
	ws, err := a.cfg.Watch.Maintenance(ctx, since)
	if err != nil {
		return out, fmt.Errorf("reading maintenance windows: %w", err)
	}
	return append(out, ws...), nil
}

// notifyChanges passes changes to the notifier, less those a maintenance
// window silences. A failure is logged, never returned: the change is
// recorded in the watch store whether or not anyone is told.
func (a *Activities) notifyChanges(ctx context.Context, changes []notify.Change) {
	if a.cfg.Notifier == nil || len(changes) == 0 {
		return
	}
	since := changes[0].At
	for _, c := range changes {
		if c.At.Before(since) {
			since = c.At
		}
	}
	windows, err := a.maintenanceWindows(ctx, since)
	if err != nil {
		// Fail open: a change told during maintenance beats one lost.
		a.log.Warn("notifying changes without the store's maintenance windows", "err", err)
	}
	kept, silenced := notify.Silence(changes, windows)
	for _, c := range silenced {
		a.log.Info("notification silenced by a maintenance window", "provider", c.Provider, "dataset", c.Dataset, "kind", c.Kind)
	}
	if len(kept) == 0 {
		return
	}
	for attempt := range 3 {
		if err = a.cfg.Notifier.Notify(ctx, kept); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			attempt = 3
		case <-time.After(time.Duration(500<<attempt) * time.Millisecond):
		}
	}
	a.log.Error("passing changes to the notifier", "changes", len(kept), "err", err)
}

// NotifyEvent notifies an operational event when it is one people are
// told about (an exhausted daily quota: notify.FromEvent). It is a
// function, not a method: every method of Activities is an activity.
func NotifyEvent(ctx context.Context, a *Activities, e watch.Event) {
	if c, ok := notify.FromEvent(e); ok {
		a.notifyChanges(ctx, []notify.Change{c})
	}
}

// watchChanges returns the notified changes among a probe's, each saying
// how many datasets of the provider the watch probes (notify.Change.Watched:
// how a notification tells the provider's own down from some of its
// datasets').
func (a *Activities) watchChanges(provider string, changes []watch.Change) []notify.Change {
	var out []notify.Change
	for _, c := range changes {
		if n, ok := notify.FromWatch(provider, c); ok {
			n.Watched = a.watchedOf(provider)
			out = append(out, n)
		}
	}
	return out
}

// watchedOf counts the registry's datasets of provider that the watch
// probes (a probe section with an interval, as watchsync.Probed lists).
func (a *Activities) watchedOf(provider string) int {
	n := 0
	for _, ds := range a.cfg.Registry.DatasetsOf(provider) {
		if ds.Probe != nil && ds.Probe.IntervalMinutes > 0 {
			n++
		}
	}
	return n
}
