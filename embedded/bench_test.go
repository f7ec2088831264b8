package embedded

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

func noop(context.Context) error { return nil }

// fanOutWorkflow runs n no-op activities at once and waits for all of them.
func fanOutWorkflow(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	futures := make([]workflow.Future, n)
	for i := range futures {
		futures[i] = workflow.ExecuteActivity(ctx, noop)
	}
	for _, f := range futures {
		if err := f.Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkNoopActivities measures bare Temporal throughput on the embedded
// server: one workflow fans out b.N no-op activities to one worker with
// default options. It reports activities/s; the time of a server start is
// not counted. Sluice's own overhead is measured against this number.
func BenchmarkNoopActivities(b *testing.B) {
	s := startServer(b, b.TempDir(), false)
	c := dial(b, s)
	const taskQueue = "sluice-bench"
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(fanOutWorkflow)
	w.RegisterActivity(noop)
	if err := w.Start(); err != nil {
		b.Fatalf("starting worker: %v", err)
	}
	b.Cleanup(w.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	b.ResetTimer()
	start := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        fmt.Sprintf("fan-out-%d", b.N),
		TaskQueue: taskQueue,
	}, fanOutWorkflow, b.N)
	if err != nil {
		b.Fatalf("starting workflow: %v", err)
	}
	if err := run.Get(ctx, nil); err != nil {
		b.Fatalf("workflow: %v", err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "activities/s")
}
