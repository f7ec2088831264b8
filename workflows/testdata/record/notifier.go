package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/notify"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/worker"
	"github.com/sluicehq/sluice/workflows"
)

// notifierKey is the recorded notifier's webhook key (a fixture).
const notifierKey = "record-notifier-key"

// recordNotifier runs the notifier on a worker of its own, delivering to
// a webhook receiver on loopback that refuses its first two attempts:
// the three watched datasets of kis down and one of fred's two within a
// group window, in two signals 400 ms apart, one of them signalled
// twice — kis's down ("kis down: 3 of 3 datasets") and fred's dataset's —
// then kis's recovery, all three datasets back up ("kis back up: 3 of 3
// datasets"). It waits for the three notifications, queries the
// notifier's state, terminates it and returns its run id.
func recordNotifier(ctx context.Context, tc client.Client, reg *registry.Registry, tmp string, log *slog.Logger) (string, error) {
	const queue = "record-notifier"
	var mu sync.Mutex
	attempts, kept := 0, map[string]bool{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if attempts <= 2 {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		if err := notify.Verify([]byte(notifierKey), r.Header, body, time.Now(), 0); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		kept[r.Header.Get(notify.HeaderIdempotency)] = true
	}))
	defer hook.Close()
	cfg := &notify.Config{GroupWindow: time.Second, Sinks: []notify.Sink{{Name: "ops", Type: notify.WebhookSink, URL: hook.URL, Key: []byte(notifierKey)}}}
	lake, err := sink.NewLocal(filepath.Join(tmp, "notifier-lake"))
	if err != nil {
		return "", err
	}
	w, err := worker.Start(worker.Options{Client: tc, TaskQueue: queue, Config: activities.Config{Registry: reg, Sink: lake, Logger: log, Notify: cfg}})
	if err != nil {
		return "", err
	}
	defer w.Stop()
	nc := workflows.NewNotifierClient(tc, queue, cfg.GroupWindow, cfg.GroupMax)
	at := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	change := func(provider, ds string, after time.Duration, from, to string) notify.Change {
		c, ok := notify.FromWatch(provider, watch.Change{At: at.Add(after), Dataset: ds, Kind: watch.ChangeState, From: from, To: to,
			Summary: fmt.Sprintf("%s %s → %s", ds, from, to)})
		if !ok {
			panic("not notified: " + ds)
		}
		c.Watched = map[string]int{"kis": 3, "fred": 2}[provider] // as the activities say it
		return c
	}
	wait := func(n int) error {
		for {
			mu.Lock()
			got := len(kept)
			mu.Unlock()
			if got >= n {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("recording the notifier: %d of %d notifications kept: %w", got, n, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	downs := []notify.Change{change("kis", "kis-a", 0, "up", "down"), change("kis", "kis-b", time.Second, "up", "down")}
	if err := nc.Notify(ctx, downs); err != nil {
		return "", err
	}
	// The rest a moment later, in a workflow task of its own: while the
	// group window runs.
	time.Sleep(400 * time.Millisecond)
	if err := nc.Notify(ctx, []notify.Change{downs[1], change("kis", "kis-c", 2*time.Second, "up", "down"), change("fred", "fred-dgs2", 3*time.Second, "up", "down")}); err != nil {
		return "", err
	}
	if err := wait(2); err != nil {
		return "", err
	}
	if err := nc.Notify(ctx, []notify.Change{change("kis", "kis-a", time.Hour, "down", "up"), change("kis", "kis-b", time.Hour, "down", "up"),
		change("kis", "kis-c", time.Hour+time.Second, "down", "up")}); err != nil {
		return "", err
	}
	if err := wait(3); err != nil {
		return "", err
	}
	v, err := tc.QueryWorkflow(ctx, workflows.NotifierWorkflowID, "", workflows.NotifierStateQuery)
	if err != nil {
		return "", err
	}
	var st workflows.NotifierStatus
	if err := v.Get(&st); err != nil {
		return "", err
	}
	d, err := tc.DescribeWorkflowExecution(ctx, workflows.NotifierWorkflowID, "")
	if err != nil {
		return "", err
	}
	runID := d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	fmt.Printf("notifier: %d delivered, %d duplicates, %d attempts at the receiver\n", st.Delivered, st.Duplicates, attempts)
	if err := tc.TerminateWorkflow(ctx, workflows.NotifierWorkflowID, runID, "recorded"); err != nil {
		return "", err
	}
	return runID, nil
}
