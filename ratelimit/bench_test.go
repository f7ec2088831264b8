package ratelimit_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/ledger"
)

// BenchmarkAcquire measures the limiter's service: permits a second and the
// acquire round trip, with 64 concurrent callers in one process and limits
// that never bind.
func BenchmarkAcquire(b *testing.B) {
	tc := startTemporal(b)
	lc := ratelimit.NewClient(tc, ratelimit.ClientOptions{TaskQueue: "limiter-test"})
	lim := ledger.Limits{Windows: []ledger.Window{{Length: time.Millisecond, Count: 10_000}}, Tolerance: time.Second}
	ctx := context.Background()
	if err := lc.Warm(ctx, "bench/key", lim); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	work := make(chan struct{}, b.N)
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				if _, err := lc.Acquire(ctx, "bench/key", lim, ratelimit.AcquireOptions{MaxWait: time.Hour}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	st := lc.Stats()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "permits/s")
	b.ReportMetric(float64(st.Granted)/float64(max(st.Updates, 1)), "permits/update")
	b.ReportMetric(float64(st.MaxRTT.Microseconds())/1000, "max-rtt-ms")
}

// BenchmarkTaskQueueRateLimit measures the alternative this design rejects:
// Temporal's own task-queue activity rate limit
// (worker.Options.TaskQueueActivitiesPerSecond = 5) on a one-partition
// queue, 30 queued no-op activities. It reports the most activity starts
// seen in any one-second window: above 5, the queue limit alone is a
// ceiling, not a guarantee of the provider's sliding window.
func BenchmarkTaskQueueRateLimit(b *testing.B) {
	tc := startTemporal(b)
	var mu sync.Mutex
	var starts []time.Time
	w := sdkworker.New(tc, "tq-limit", sdkworker.Options{TaskQueueActivitiesPerSecond: 5})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context, n int) error {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
		fs := make([]workflow.Future, n)
		for i := range fs {
			fs[i] = workflow.ExecuteActivity(ctx, "Stamp")
		}
		for _, f := range fs {
			if err := f.Get(ctx, nil); err != nil {
				return err
			}
		}
		return nil
	}, workflow.RegisterOptions{Name: "FanOut"})
	w.RegisterActivityWithOptions(func(context.Context) error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return nil
	}, activity.RegisterOptions{Name: "Stamp"})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	most := 0
	for i := range b.N {
		starts = starts[:0]
		run, err := tc.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: fmt.Sprintf("fan-%d", i), TaskQueue: "tq-limit"}, "FanOut", 30)
		if err != nil {
			b.Fatal(err)
		}
		if err := run.Get(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
		for i := range starts {
			n := 0
			for j := i; j < len(starts) && starts[j].Sub(starts[i]) < time.Second; j++ {
				n++
			}
			most = max(most, n)
		}
	}
	b.ReportMetric(float64(most), "max-starts-per-1s")
}
