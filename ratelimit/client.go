package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// maxTolerance bounds how far a client widens its tolerance to slow round
// trips.
const maxTolerance = 2 * time.Second

// ErrLate means a permit's send window passed before the caller could use
// it (the process stalled): the caller must acquire again, never send.
var ErrLate = errors.New("permit expired before use")

// QuotaError is returned by Acquire when the scope's daily quota has no
// room within the caller's maximum wait.
type QuotaError struct {
	Scope string
	QuotaExhausted
}

// Error says which scope's quota is spent and until when.
func (e *QuotaError) Error() string {
	return fmt.Sprintf("scope %s: daily quota of %d calls exhausted until %s", e.Scope, e.Quota, e.ResetAt.Format(time.RFC3339))
}

// Permit allows one call to a scope instance. The call must be sent at or
// after SendAt and no later than Deadline; Wait sleeps until then.
type Permit struct {
	Scope    string
	SendAt   time.Time // local clock
	Deadline time.Time // local clock
}

// Wait sleeps until the permit's send time and returns nil if the caller
// is still within its send window, ErrLate if it is not (acquire again), or
// the context's error. tick, if not nil, is called about every second while
// waiting (activities heartbeat from it).
func (p Permit) Wait(ctx context.Context, tick func()) error {
	for {
		d := time.Until(p.SendAt)
		if d <= 0 {
			break
		}
		if tick != nil && d > time.Second {
			d = time.Second
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if tick != nil {
			tick()
		}
	}
	if time.Now().After(p.Deadline) {
		return ErrLate
	}
	return nil
}

// Client asks the limiter workflows for permits on behalf of one process.
// Concurrent Acquire calls for one scope are batched into a single acquire
// update in flight per scope per process, so that a fan-out of hundreds of
// activities costs the limiter a handful of updates. Safe for concurrent
// use; the zero value is not usable: call NewClient.
type Client struct {
	tc        client.Client
	taskQueue string
	caller    string
	log       *slog.Logger
	recovery  time.Duration

	mu     sync.Mutex
	scopes map[string]*batcher

	statsMu sync.Mutex
	stats   ClientStats
}

// ClientStats counts what a client did, for metrics and benchmarks.
type ClientStats struct {
	Updates   int64         // acquire updates sent
	Granted   int64         // permits handed out
	LateBatch int64         // batches discarded because the round trip exceeded the tolerance
	MaxRTT    time.Duration // slowest acquire round trip
}

// ClientOptions configure a Client.
type ClientOptions struct {
	TaskQueue string // where limiter workflows run
	// RecoveryStep is the backoff recovery step given to new limiters
	// (0: DefaultRecoveryStep).
	RecoveryStep time.Duration
	Logger       *slog.Logger
}

// NewClient returns a limiter client over a Temporal client.
func NewClient(tc client.Client, opts ClientOptions) *Client {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	host, _ := os.Hostname()
	return &Client{
		tc: tc, taskQueue: opts.TaskQueue, caller: fmt.Sprintf("%s/%d", host, os.Getpid()),
		log: log, recovery: opts.RecoveryStep, scopes: map[string]*batcher{},
	}
}

// Stats returns a snapshot of the client's counters.
func (c *Client) Stats() ClientStats {
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
	return c.stats
}

type waiter struct {
	ctx     context.Context
	limits  Limits
	maxWait time.Duration
	res     chan result
}

type result struct {
	permit Permit
	err    error
}

type batcher struct {
	scope   string
	pending []*waiter
	running bool
	// release holds grants of a late answer, given back with the next
	// acquire.
	release []time.Time
	// late counts consecutive answers slower than the tolerance; tol,
	// when set, is the tolerance widened to the round trips observed.
	late int
	tol  time.Duration
}

// Acquire returns a permit for one call to the scope instance. It blocks
// for one round trip to the limiter (batched with the process's other
// callers), not for the permit's wait: call Permit.Wait before sending.
func (c *Client) Acquire(ctx context.Context, scopeID string, lim Limits, maxWait time.Duration) (Permit, error) {
	if err := lim.Validate(); err != nil {
		return Permit{}, fmt.Errorf("acquiring permit for %s: %w", scopeID, err)
	}
	w := &waiter{ctx: ctx, limits: lim, maxWait: maxWait, res: make(chan result, 1)}
	c.mu.Lock()
	b := c.scopes[scopeID]
	if b == nil {
		b = &batcher{scope: scopeID}
		c.scopes[scopeID] = b
	}
	b.pending = append(b.pending, w)
	if !b.running {
		b.running = true
		go c.run(b)
	}
	c.mu.Unlock()
	select {
	case r := <-w.res:
		return r.permit, r.err
	case <-ctx.Done():
		return Permit{}, ctx.Err()
	}
}

// run serves a scope's pending waiters, one acquire update at a time.
func (c *Client) run(b *batcher) {
	backoff := 50 * time.Millisecond
	for {
		c.mu.Lock()
		var batch []*waiter
		rest := b.pending[:0]
		for _, w := range b.pending {
			switch {
			case w.ctx.Err() != nil:
				// Gone: its caller already returned.
			case len(batch) < MaxBatch:
				batch = append(batch, w)
			default:
				rest = append(rest, w)
			}
		}
		b.pending = rest
		if len(batch) == 0 {
			b.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()

		lim, maxWait := batch[0].limits, batch[0].maxWait
		for _, w := range batch[1:] {
			lim = Stricter(lim, w.limits)
			maxWait = min(maxWait, w.maxWait)
		}
		lim.Tolerance = max(lim.Tolerance, b.tol)
		sent := time.Now()
		release := b.release
		b.release = nil
		resp, err := c.acquire(b.scope, lim, len(batch), maxWait, release)
		received := time.Now()
		rtt := received.Sub(sent)
		c.statsMu.Lock()
		c.stats.Updates++
		c.stats.MaxRTT = max(c.stats.MaxRTT, rtt)
		c.statsMu.Unlock()
		if err != nil {
			c.log.Warn("limiter update failed; retrying", "scope", b.scope, "err", err, "backoff", backoff)
			// Whether the update was applied is unknown; releasing grants
			// that may already be gone is harmless.
			b.release = release
			c.requeue(b, batch)
			time.Sleep(backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		if rtt <= lim.Tolerance {
			b.late = 0
		}
		if rtt > lim.Tolerance {
			// Round trips this slow, again and again, would never yield a
			// usable grant: widen this process's tolerance to twice the
			// round trip (grants are spaced further apart, never closer).
			b.late++
			if b.late >= 3 && b.tol < maxTolerance {
				b.tol = min(2*rtt, maxTolerance)
				c.log.Warn("limiter round trips exceed the tolerance; widening it", "scope", b.scope,
					"rtt", rtt, "tolerance", lim.Tolerance, "widened_to", b.tol, "hint", "raise --limiter-tolerance")
				b.late = 0
			}
			// A grant may be used only within [grant, grant+tolerance];
			// this answer took longer, so the calls could land late. The
			// slots are wasted, never risked.
			c.statsMu.Lock()
			c.stats.LateBatch++
			c.statsMu.Unlock()
			c.log.Debug("limiter answer slower than tolerance; releasing its grants and asking again", "scope", b.scope, "rtt", rtt, "tolerance", lim.Tolerance)
			b.release = append(b.release, resp.Grants...)
			c.requeue(b, batch)
			continue
		}
		// Count before handing out, so a caller that reads Stats after
		// its permit sees it counted.
		c.statsMu.Lock()
		c.stats.Granted += int64(min(len(batch), len(resp.Waits)))
		c.statsMu.Unlock()
		slack := lim.Tolerance - rtt
		var again []*waiter
		for i, w := range batch {
			if i >= len(resp.Waits) && resp.Quota == nil {
				// Held back by the horizon: next round.
				again = append(again, w)
				continue
			}
			if i >= len(resp.Waits) {
				q := resp.Quota
				if q == nil {
					q = &QuotaExhausted{}
				}
				w.res <- result{err: &QuotaError{Scope: b.scope, QuotaExhausted: *q}}
				continue
			}
			at := received.Add(resp.Waits[i])
			w.res <- result{permit: Permit{Scope: b.scope, SendAt: at, Deadline: at.Add(slack)}}
		}
		if len(again) > 0 {
			c.requeue(b, again)
		}
	}
}

// Warm starts a scope's limiter if it is not running, so that the first
// acquire does not pay for the workflow's start.
func (c *Client) Warm(ctx context.Context, scopeID string, lim Limits) error {
	h, err := c.tc.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: c.startOp(scopeID, lim),
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID:   WorkflowID(scopeID),
			UpdateName:   PingUpdate,
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return fmt.Errorf("warming limiter %s: %w", scopeID, err)
	}
	var s State
	if err := h.Get(ctx, &s); err != nil {
		return fmt.Errorf("warming limiter %s: %w", scopeID, err)
	}
	return nil
}

func (c *Client) requeue(b *batcher, batch []*waiter) {
	c.mu.Lock()
	b.pending = append(batch, b.pending...)
	c.mu.Unlock()
}

func (c *Client) startOp(scopeID string, lim Limits) client.WithStartWorkflowOperation {
	return c.tc.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       WorkflowID(scopeID),
		TaskQueue:                c.taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, WorkflowName, LimiterInput{ScopeID: scopeID, Limits: lim, RecoveryStep: c.recovery})
}

func (c *Client) acquire(scopeID string, lim Limits, n int, maxWait time.Duration, release []time.Time) (AcquireResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := c.tc.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: c.startOp(scopeID, lim),
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID:   WorkflowID(scopeID),
			UpdateName:   AcquireUpdate,
			Args:         []any{AcquireRequest{N: n, Limits: lim, MaxWait: maxWait, Horizon: lim.horizon(), Release: release, Caller: c.caller}},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return AcquireResponse{}, fmt.Errorf("acquiring %d permits for %s: %w", n, scopeID, err)
	}
	var resp AcquireResponse
	if err := h.Get(ctx, &resp); err != nil {
		return AcquireResponse{}, fmt.Errorf("acquiring %d permits for %s: %w", n, scopeID, err)
	}
	return resp, nil
}

// Penalize tells a scope's limiter that the provider answered with its
// rate-limit error: the limiter halves the scope's rate at once and waits
// retryAfter before the next grant. It returns the factors before and after.
func (c *Client) Penalize(ctx context.Context, scopeID string, lim Limits, retryAfter time.Duration, reason string) (PenalizeResponse, error) {
	h, err := c.tc.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: c.startOp(scopeID, lim),
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID:   WorkflowID(scopeID),
			UpdateName:   PenalizeUpdate,
			Args:         []any{PenalizeRequest{RetryAfter: retryAfter, Reason: reason, Caller: c.caller}},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return PenalizeResponse{}, fmt.Errorf("penalizing %s: %w", scopeID, err)
	}
	var resp PenalizeResponse
	if err := h.Get(ctx, &resp); err != nil {
		return PenalizeResponse{}, fmt.Errorf("penalizing %s: %w", scopeID, err)
	}
	return resp, nil
}

// State queries a scope's limiter.
func (c *Client) State(ctx context.Context, scopeID string) (State, error) {
	v, err := c.tc.QueryWorkflow(ctx, WorkflowID(scopeID), "", StateQuery)
	if err != nil {
		return State{}, fmt.Errorf("querying limiter %s: %w", scopeID, err)
	}
	var s State
	if err := v.Get(&s); err != nil {
		return State{}, fmt.Errorf("decoding limiter %s state: %w", scopeID, err)
	}
	return s, nil
}
