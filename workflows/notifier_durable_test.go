package workflows_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/notify"
	"github.com/sluicehq/sluice/workflows"
)

// notifierWorker starts a worker hosting the notifier, its deliveries
// sent by notify.Sender to cfg's sinks; stop stops it.
func notifierWorker(t *testing.T, tc client.Client, cfg *notify.Config) (stop func()) {
	t.Helper()
	w := sdkworker.New(tc, "notifier-test", sdkworker.Options{})
	w.RegisterWorkflowWithOptions(workflows.Notifier, workflow.RegisterOptions{Name: workflows.NotifierName})
	w.RegisterActivityWithOptions(func(context.Context) ([]string, error) { return cfg.Names(), nil }, activity.RegisterOptions{Name: "NotifySinks"})
	w.RegisterActivityWithOptions(func(ctx context.Context, d activities.NotifyDelivery) error {
		return notify.Sender{}.Send(ctx, *cfg.Sink(d.Sink), d.Notification)
	}, activity.RegisterOptions{Name: "NotifyDeliver"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var once atomic.Bool
	stop = func() {
		if once.CompareAndSwap(false, true) {
			w.Stop()
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestNotifierSurvivesAReceiverOutageAndALostWorker, on a real embedded
// Temporal server: the receiver refuses every delivery while the only
// worker is stopped and another started; once the receiver is back the
// notification is delivered, its group kept once, and the same change
// signalled again is not sent again.
func TestNotifierSurvivesAReceiverOutageAndALostWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Options{DataDir: t.TempDir(), FrontendAddr: "127.0.0.1:0", UIAddr: embedded.UIOff,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("starting Temporal: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	tc, err := client.Dial(client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)

	var up atomic.Bool
	const urlToken, key = "canary-url-token", "canary-hmac-key"
	rc, url := newHookReceiver(t, key, up.Load)
	cfg := &notify.Config{Sinks: []notify.Sink{{Name: "ops", Type: notify.WebhookSink, URL: url + "/hook?token=" + urlToken, Key: []byte(key)}}}
	stop1 := notifierWorker(t, tc, cfg)
	nc := workflows.NewNotifierClient(tc, "notifier-test", time.Second, 0)
	changes := downChanges("kis", 0, 3)
	if err := nc.Notify(ctx, changes); err != nil {
		t.Fatal(err)
	}
	attempts := func() int {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return rc.attempts
	}
	waitFor(t, ctx, "two refused attempts", func() bool { return attempts() >= 2 })
	stop1() // the worker is lost mid-retry
	notifierWorker(t, tc, cfg)
	up.Store(true)
	waitFor(t, ctx, "the delivery", func() bool { return len(rc.kept()) == 1 })
	if err := nc.Notify(ctx, changes[:1]); err != nil { // signalled again
		t.Fatal(err)
	}
	// The notifier's state says when it has dropped the change it saw.
	waitFor(t, ctx, "the notifier's state", func() bool {
		v, err := tc.QueryWorkflow(ctx, workflows.NotifierWorkflowID, "", workflows.NotifierStateQuery)
		if err != nil {
			return false
		}
		var st workflows.NotifierStatus
		return v.Get(&st) == nil && st.Duplicates == 1 && st.Delivered == 1 && st.Outbox == 0 && st.Pending == 0
	})
	kept := rc.kept()
	if len(kept) != 1 || len(kept[0].Changes) != 3 || kept[0].Title != "kis: 3 datasets down" {
		t.Fatalf("receiver kept %+v", kept)
	}
	if n := attempts(); rc.refused < 2 || n != rc.refused+1 {
		t.Fatalf("%d attempts, %d refused: want every attempt but the last refused and none after", n, rc.refused)
	}
	t.Logf("%d attempts, %d refused across a lost worker, delivered once", attempts(), rc.refused)

	// The sink's URL and key never reach the history: every event, the
	// failures of the refused attempts among them, in its wire form.
	it := tc.GetWorkflowHistory(ctx, workflows.NotifierWorkflowID, "", false, 0)
	events := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		events++
		wire, err := protojson.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{urlToken, key, url} {
			if strings.Contains(string(wire), secret) {
				t.Fatalf("history event %d (%s) holds %q", ev.GetEventId(), ev.GetEventType(), secret)
			}
		}
	}
	if events == 0 {
		t.Fatal("no history read")
	}
}

func waitFor(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
