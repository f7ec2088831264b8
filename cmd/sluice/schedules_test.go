package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// runSluice runs the sluice command line in-process and returns what it
// printed.

// oneLine collapses the runs of spaces a table pads with.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestSchedulesCommands: sluice schedules sync (dry run, then for real,
// then again: nothing changes), list, pause (a note required), unpause and
// trigger against a real Temporal server (the shared one, in a namespace of
// its own), with the default registry.
func TestSchedulesCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr, ns := sharedNamespace(t)
	conn := []string{"--temporal", addr, "--namespace", ns}
	run := func(args ...string) string {
		t.Helper()
		out, err := runSluice(ctx, append(args, conn...)...)
		if err != nil {
			t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return oneLine(out)
	}
	if out := run("schedules", "sync", "--dry-run"); !strings.Contains(out, "would create sluice-ecos-0900-daily ecos 0 9 * * * (Asia/Seoul) 80 datasets") ||
		!strings.Contains(out, "dry run: 7 created, 0 updated, 0 deleted, 0 unchanged") {
		t.Errorf("dry run:\n%s", out)
	}
	if out := run("schedules", "list"); !strings.Contains(out, "no schedules of Sluice's") {
		t.Errorf("a dry run created schedules:\n%s", out)
	}
	if out := run("schedules", "sync"); !strings.Contains(out, "create sluice-kis-1830-mon-fri kis 30 18 * * 1-5 (Asia/Seoul) 62 datasets") ||
		!strings.Contains(out, "synced: 7 created, 0 updated, 0 deleted, 0 unchanged") {
		t.Errorf("sync:\n%s", out)
	}
	if out := run("schedules", "sync"); !strings.Contains(out, "synced: 0 created, 0 updated, 0 deleted, 7 unchanged") {
		t.Errorf("second sync:\n%s", out)
	}
	if out, err := runSluice(ctx, append([]string{"schedules", "pause", "sluice-fred-0700-daily"}, conn...)...); err == nil {
		t.Errorf("pause without a note: %s", out)
	}
	run("schedules", "pause", "sluice-fred-0700-daily", "--note", "FRED maintenance")
	out := run("schedules", "list")
	for _, want := range []string{"SCHEDULE WHEN TIMEZONE DATASETS STATE NEXT LAST RUN", "sluice-fred-0700-daily 0 7 * * * America/Chicago 4 paused: FRED maintenance",
		"sluice-upbit-0005-daily 5 0 * * * UTC 5 active"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	if out := run("schedules", "sync"); !strings.Contains(out, "paused, kept paused: FRED maintenance") || !strings.Contains(out, "7 unchanged") {
		t.Errorf("sync of a paused schedule:\n%s", out)
	}
	run("schedules", "unpause", "sluice-fred-0700-daily")
	run("schedules", "trigger", "sluice-upbit-0005-daily")
	tc, err := client.Dial(client.Options{HostPort: addr, Namespace: ns, Logger: temporalLogger(discardLogger())})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := tc.ScheduleClient().GetHandle(ctx, "sluice-upbit-0005-daily").Describe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(d.Info.RecentActions); n > 0 {
			id := d.Info.RecentActions[n-1].StartWorkflowResult.WorkflowID
			if !strings.HasPrefix(id, "sluice-upbit-0005-daily-") {
				t.Errorf("the triggered run's workflow id %s", id)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the trigger started no run")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out := run("schedules", "list"); !strings.Contains(out, "sluice-fred-0700-daily 0 7 * * * America/Chicago 4 active") {
		t.Errorf("after unpause:\n%s", out)
	}
}
