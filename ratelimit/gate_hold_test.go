package ratelimit_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// slotLimiter stands in for the limiter workflows behind a Temporal
// client: each scope hands out only the instants of a fixed list — the
// slots other callers' grants leave free — as the real ledger would: a
// grant at the first free slot no earlier than now+Delay and NotBefore, or,
// past NotAfter, nothing and that slot as Earliest (RulesWindow). Released
// grants free their slot again. It answers acquire updates only, at once.
type slotLimiter struct {
	client.Client // nil: only what the limiter client's acquire calls is served

	mu      sync.Mutex
	free    map[string][]time.Time // scope → free slots, ascending
	granted map[uint64]slotGrant   // grants not released
	nextID  uint64
	asks    map[string]int // acquire updates per scope
}

type slotGrant struct {
	scope string
	at    time.Time
}

func newSlotLimiter() *slotLimiter {
	return &slotLimiter{free: map[string][]time.Time{}, granted: map[uint64]slotGrant{}, asks: map[string]int{}}
}

func (f *slotLimiter) NewWithStartWorkflowOperation(client.StartWorkflowOptions, any, ...any) client.WithStartWorkflowOperation {
	return nil
}

func (f *slotLimiter) UpdateWithStartWorkflow(_ context.Context, o client.UpdateWithStartWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	if o.UpdateOptions.UpdateName != ratelimit.AcquireUpdate {
		return nil, fmt.Errorf("slot limiter: update %q not served", o.UpdateOptions.UpdateName)
	}
	req := o.UpdateOptions.Args[0].(ratelimit.AcquireRequest)
	scope := strings.TrimPrefix(o.UpdateOptions.WorkflowID, "limiter/")
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asks[scope]++
	for _, id := range req.Release {
		if g, ok := f.granted[id]; ok {
			delete(f.granted, id)
			f.free[g.scope] = append(f.free[g.scope], g.at)
			slices.SortFunc(f.free[g.scope], time.Time.Compare)
		}
	}
	first := now.Add(req.Delay)
	if req.NotBefore.After(first) {
		first = req.NotBefore
	}
	free := f.free[scope]
	i := slices.IndexFunc(free, func(t time.Time) bool { return !t.Before(first) })
	if i < 0 {
		return nil, fmt.Errorf("slot limiter: scope %s has no slot from %s", scope, first)
	}
	resp := ratelimit.AcquireResponse{Rules: ledger.RulesLatest, Factor: 1}
	if at := free[i]; !req.NotAfter.IsZero() && at.After(req.NotAfter) {
		resp.Earliest = at
	} else {
		f.nextID++
		f.granted[f.nextID] = slotGrant{scope: scope, at: at}
		f.free[scope] = slices.Delete(free, i, i+1)
		resp.Grants = []ledger.Grant{{ID: f.nextID, At: at}}
		resp.Waits = []time.Duration{at.Sub(now)}
	}
	return slotAnswer{resp}, nil
}

// slotAnswer is a completed acquire update's handle.
type slotAnswer struct{ resp ratelimit.AcquireResponse }

func (slotAnswer) WorkflowID() string { return "" }
func (slotAnswer) RunID() string      { return "" }
func (slotAnswer) UpdateID() string   { return "" }
func (a slotAnswer) Get(_ context.Context, v any) error {
	*v.(*ratelimit.AcquireResponse) = a.resp
	return nil
}

// TestGateHoldsScopesWhoseSlotsInterleave: a call that needs two scopes
// whose free slots interleave — each one's next slot lies just past the
// other's window, 50 times over, before both are free at one instant —
// holds both at that instant, asking each scope once per slot it passes
// and giving every slot it passed back. The old gate aligned its permits
// in rounds — re-asking, each round, the scope whose permit ended before
// the other's began — and gave up after 64 (20 before): "could not hold
// permits of all its 2 scopes at once in 64 rounds". Contending callers
// leave such interleaved slots; the slots here are fixed (slotLimiter),
// so the walk is the same on a quiet machine and a loaded one: a window
// (20 ms) never reaches the other scope's next slot (50 ms on).
func TestGateHoldsScopesWhoseSlotsInterleave(t *testing.T) {
	const (
		misses = 50 // slots of each scope before the common one
		tol    = 20 * time.Millisecond
		step   = 50 * time.Millisecond
	)
	reg := twinRegistry(t, "UTC")
	f := newSlotLimiter()
	// fred/key (one call per 150 ms) is the sparser scope, held first:
	// free at the even steps; fred/ip at the odd ones; then both at the
	// common slot (and every step after it).
	start := time.Now().Add(500 * time.Millisecond)
	common := start.Add(2 * misses * step)
	for j := range 2 * misses {
		scope := "fred/key"
		if j%2 == 1 {
			scope = "fred/ip"
		}
		f.free[scope] = append(f.free[scope], start.Add(time.Duration(j)*step))
	}
	for k := range 10 {
		for _, scope := range []string{"fred/key", "fred/ip"} {
			f.free[scope] = append(f.free[scope], common.Add(time.Duration(k)*step))
		}
	}
	lc := ratelimit.NewClient(f, ratelimit.ClientOptions{TaskQueue: "limiter-test"})
	g, err := ratelimit.NewGate(ratelimit.GateOptions{Registry: reg, Client: lc, Tolerance: tol})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := g.Wait(ctx, permit.Call{Provider: "fred", Dataset: "fred-dgs10", Kind: permit.CallData}); err != nil {
		t.Fatalf("wait: %v", err)
	}
	st := lc.Stats()
	f.mu.Lock()
	defer f.mu.Unlock()
	var held []string
	for _, gr := range f.granted {
		held = append(held, gr.scope)
		if !gr.at.Equal(common) {
			t.Errorf("%s held at %s, want the common slot %s", gr.scope, gr.at.Sub(start), common.Sub(start))
		}
	}
	slices.Sort(held)
	if !slices.Equal(held, []string{"fred/ip", "fred/key"}) {
		t.Errorf("grants not given back: %v, want one of each scope", held)
	}
	t.Logf("asks: fred/key %d, fred/ip %d; client: %d updates, %d late answers, %d late permits",
		f.asks["fred/key"], f.asks["fred/ip"], st.Updates, st.LateBatch, st.LatePermits)
	// One ask of each scope per slot of fred/key passed: no rounds spent.
	// (An answer slower than the tolerance, or a permit the process let
	// expire, is asked again: a stall of the machine, not the walk.)
	if st.LateBatch == 0 && st.LatePermits == 0 && (f.asks["fred/key"] != misses+1 || f.asks["fred/ip"] != misses+1) {
		t.Errorf("asks: fred/key %d, fred/ip %d; want %d each", f.asks["fred/key"], f.asks["fred/ip"], misses+1)
	}
	// The gate counted the call's round trips: every update it went out in.
	if tr := g.Trips(); tr.Calls() != 1 || tr.Quantile(1) != f.asks["fred/key"]+f.asks["fred/ip"] {
		t.Errorf("the gate counted %d calls, the most round trips %d; want 1 call of %d", tr.Calls(), tr.Quantile(1), f.asks["fred/key"]+f.asks["fred/ip"])
	}
}
