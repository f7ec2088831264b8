package ratelimit_test

import (
	"context"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/embedded/embeddedtest"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/ledger"
)

// startTemporal runs a real embedded Temporal server and a worker hosting
// the limiter workflow; it returns a client.
func startTemporal(t testing.TB) client.Client {
	t.Helper()
	tc, _ := startServer(t)
	return tc
}

// sharedServer is the one embedded Temporal server the package's tests
// share, each in a namespace of its own (startServer). TestMain stops it.
var sharedServer embeddedtest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	sharedServer.Stop()
	os.Exit(code)
}

// startServer is startTemporal, returning the namespace too: a new
// namespace named after the test on the shared server, which it starts
// on first use.
func startServer(t testing.TB) (client.Client, string) {
	t.Helper()
	hostPort, ns := sharedServer.Namespace(t)
	tc, err := client.Dial(client.Options{HostPort: hostPort, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	w := sdkworker.New(tc, "limiter-test", sdkworker.Options{})
	w.RegisterWorkflowWithOptions(ratelimit.ScopeLimiter, workflow.RegisterOptions{Name: ratelimit.WorkflowName})
	w.RegisterWorkflowWithOptions(events.Workflow, workflow.RegisterOptions{Name: events.WorkflowName})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return tc, ns
}

// TestLimiterAcrossClients runs several limiter clients — as several
// worker processes would — against one scope on a real Temporal server and
// checks, over every permit actually used, that no sliding window held more
// calls than its count and no two calls came closer than the minimum
// interval. A permit is used at the moment its Wait returned nil.
func TestLimiterAcrossClients(t *testing.T) {
	tc := startTemporal(t)
	lim := ledger.Limits{
		Windows:     []ledger.Window{{Length: 300 * time.Millisecond, Count: 4}},
		MinInterval: 20 * time.Millisecond,
		// Generous, so that a noisy machine wastes grants instead of
		// failing the test: the guarantee holds either way.
		Tolerance: 100 * time.Millisecond,
	}
	const clients, callers, calls = 3, 6, 3
	var mu sync.Mutex
	var used []time.Time
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for c := 0; c < clients; c++ {
		lc := ratelimit.NewClient(tc, ratelimit.ClientOptions{TaskQueue: "limiter-test"})
		for g := 0; g < callers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < calls; i++ {
					for {
						p, err := lc.Acquire(ctx, "test/key", lim, ratelimit.AcquireOptions{MaxWait: time.Hour})
						if err != nil {
							t.Errorf("acquire: %v", err)
							return
						}
						err = p.Wait(ctx, nil)
						if err == ratelimit.ErrLate {
							continue
						}
						if err != nil {
							t.Errorf("wait: %v", err)
							return
						}
						mu.Lock()
						used = append(used, time.Now())
						mu.Unlock()
						break
					}
				}
			}()
		}
	}
	wg.Wait()
	if len(used) != clients*callers*calls {
		t.Fatalf("used %d permits, want %d", len(used), clients*callers*calls)
	}
	sort.Slice(used, func(i, j int) bool { return used[i].Before(used[j]) })
	w := lim.Windows[0]
	for i := range used {
		n := 0
		for j := i; j >= 0 && used[i].Sub(used[j]) < w.Length; j-- {
			n++
		}
		if n > w.Count {
			t.Fatalf("%d calls within %v ending at call %d (limit %d)", n, w.Length, i, w.Count)
		}
		if i > 0 && used[i].Sub(used[i-1]) < lim.MinInterval {
			t.Fatalf("calls %d and %d %v apart (min %v)", i-1, i, used[i].Sub(used[i-1]), lim.MinInterval)
		}
	}
	// The limiter is durable and queryable: its ledger counted every grant.
	lc := ratelimit.NewClient(tc, ratelimit.ClientOptions{TaskQueue: "limiter-test"})
	st, err := lc.State(ctx, "test/key")
	if err != nil {
		t.Fatal(err)
	}
	if st.Ledger.Granted < int64(len(used)) {
		t.Errorf("ledger granted %d, but %d permits were used", st.Ledger.Granted, len(used))
	}
	// Penalize halves the rate and is visible in the state.
	resp, err := lc.Penalize(ctx, "test/key", lim, ratelimit.PenalizeRequest{Reason: "test"})
	if err != nil || resp.Factor != ledger.DecreaseFactor || resp.Previous != 1 || !resp.Confirmed {
		t.Fatalf("penalize = %+v, %v", resp, err)
	}
	if st, err = lc.State(ctx, "test/key"); err != nil || st.Ledger.Penalties != 1 {
		t.Errorf("state after penalty = %+v, %v", st.Ledger, err)
	}
}

// TestLimiterWidensToleranceToSlowRoundTrips: with a tolerance no round
// trip can meet, the client widens it after a few late answers instead of
// releasing and asking again forever.
func TestLimiterWidensToleranceToSlowRoundTrips(t *testing.T) {
	tc := startTemporal(t)
	lc := ratelimit.NewClient(tc, ratelimit.ClientOptions{TaskQueue: "limiter-test"})
	lim := ledger.Limits{Windows: []ledger.Window{{Length: 100 * time.Millisecond, Count: 10}}, Tolerance: time.Microsecond}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for range 5 {
		for {
			p, err := lc.Acquire(ctx, "slow/key", lim, ratelimit.AcquireOptions{MaxWait: time.Hour})
			if err != nil {
				t.Fatalf("acquire: %v (stats %+v)", err, lc.Stats())
			}
			if err := p.Wait(ctx, nil); err == nil {
				break
			} else if err != ratelimit.ErrLate {
				t.Fatal(err)
			}
		}
	}
	if st := lc.Stats(); st.LateBatch < 3 || st.Granted < 5 {
		t.Errorf("stats %+v: want at least 3 late answers before widening, and 5 grants", st)
	}
}
