package tokenkeeper

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/sluicehq/sluice/codec"
	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/internal/kind"
)

// callTimeout bounds one round trip to a keeper.
const callTimeout = 30 * time.Second

// Polling for a busy lease: at least minPoll, at most maxPoll between
// tries, jittered. A holder usually finishes within a round trip to KIS,
// long before its lease would expire: poll often (a refused acquire
// leaves no history).
const (
	minPoll = 50 * time.Millisecond
	maxPoll = 250 * time.Millisecond
)

// StoreOptions configure a Store.
type StoreOptions struct {
	// TaskQueue is where keepers run: TaskQueue(the workers' queue).
	TaskQueue string
	// LeaseTTL is how long a lease lasts between renewals (0:
	// DefaultLeaseTTL).
	LeaseTTL time.Duration
	// Holder names this process in leases (default host/pid).
	Holder string
	Logger *slog.Logger
}

// Store is a connector.TokenStore held by token-keeper workflows: Load
// queries the keeper, WithLock holds its lease (renewed while fn runs,
// released after), and Save stores a token under that lease — only under
// it: a Save outside WithLock, or after the lease was lost, fails. Safe
// for concurrent use.
type Store struct {
	tc     client.Client
	queue  string
	ttl    time.Duration
	holder string
	log    *slog.Logger

	mu   sync.Mutex
	seen map[string]State // the last state read from each keeper
}

var _ connector.TokenStore = (*Store)(nil)

// NewStore returns a store over tc, which must seal payloads (see
// SealingClient).
func NewStore(tc client.Client, opts StoreOptions) (*Store, error) {
	if tc == nil || opts.TaskQueue == "" {
		return nil, errors.New("creating token keeper store: a client and a task queue are required")
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if err := validTTL(opts.LeaseTTL); err != nil {
		return nil, fmt.Errorf("creating token keeper store: %w", err)
	}
	if opts.Holder == "" {
		host, _ := os.Hostname()
		opts.Holder = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Store{tc: tc, queue: opts.TaskQueue, ttl: opts.LeaseTTL, holder: opts.Holder, log: opts.Logger, seen: map[string]State{}}, nil
}

// SealingClient returns a client sharing base's connection whose data and
// failure converters seal every payload with c. opts must be the options
// base was dialled with (namespace, logger, …): the SDK does not carry
// them over.
func SealingClient(ctx context.Context, base client.Client, opts client.Options, c *codec.Codec) (client.Client, error) {
	if c == nil {
		return nil, errors.New("creating the token keeper client: no payload codec (set " + codec.EnvKey + " or " + codec.EnvKeyFile + ")")
	}
	opts.DataConverter = c.DataConverter()
	opts.FailureConverter = c.FailureConverter()
	tc, err := client.NewClientFromExistingWithContext(ctx, base, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the token keeper client: %w", err)
	}
	return tc, nil
}

func (s *Store) remember(key string, st State) {
	s.mu.Lock()
	s.seen[key] = st
	s.mu.Unlock()
}

func (s *Store) lastSeen(key string) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.seen[key]
	st.Lease = Lease{} // a seeded keeper starts free
	return st
}

// Load queries the keeper of key. ok is false when no keeper exists yet or
// it holds no token record.
func (s *Store) Load(ctx context.Context, key string) (connector.Token, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	v, err := s.tc.QueryWorkflow(ctx, WorkflowID(key), "", StateQuery)
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return connector.Token{}, false, nil
		}
		return connector.Token{}, false, fmt.Errorf("loading token from its keeper: %w", err)
	}
	var st State
	if err := v.Get(&st); err != nil {
		return connector.Token{}, false, fmt.Errorf("loading token from its keeper: decoding its state: %w", err)
	}
	s.remember(key, st)
	r := st.Token
	if r.AccessToken == "" && r.RequestedAt.IsZero() {
		return connector.Token{}, false, nil
	}
	return connector.Token{AccessToken: r.AccessToken, ExpiresAt: r.ExpiresAt, IssuedAt: r.IssuedAt, RequestedAt: r.RequestedAt}, true, nil
}

// leaseKey carries the held lease in the context WithLock gives fn.
type leaseKey struct{ key string }

// Save stores t in the keeper of key under the lease WithLock holds; it
// fails outside WithLock and when the lease was lost.
func (s *Store) Save(ctx context.Context, key string, t connector.Token) error {
	id, _ := ctx.Value(leaseKey{key}).(string)
	if id == "" {
		return errors.New("saving token: not holding the keeper's lease (Save must run inside WithLock)")
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	rec := Record{AccessToken: t.AccessToken, ExpiresAt: t.ExpiresAt.UTC(), IssuedAt: t.IssuedAt.UTC(), RequestedAt: t.RequestedAt.UTC()}
	var st State
	if err := s.update(ctx, key, SaveUpdate, SaveRequest{LeaseID: id, Token: rec}, &st); err != nil {
		return fmt.Errorf("saving token in its keeper: %w", err)
	}
	s.remember(key, st)
	return nil
}

// ErrLeaseLost ends fn's context when the lease could not be renewed.
var ErrLeaseLost = errors.New("the token keeper's lease was lost")

// WithLock takes the keeper's lease (starting the keeper if none runs),
// runs fn while renewing it, and releases it. It waits for a busy lease
// until ctx is done. fn's context ends with ErrLeaseLost as its cause if
// the lease cannot be renewed.
func (s *Store) WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error {
	lease, err := s.acquire(ctx, key)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(context.WithValue(ctx, leaseKey{key}, lease.ID))
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		s.renew(fctx, key, lease, cancel)
	}()
	err = fn(fctx)
	cancel(nil)
	<-renewed
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer rcancel()
	if rerr := s.update(rctx, key, ReleaseUpdate, ReleaseRequest{LeaseID: lease.ID}, nil); rerr != nil && !isType(rerr, ErrTypeLeaseLost) {
		// It expires on its own within the TTL.
		s.log.Warn("releasing the token keeper's lease", "keeper", WorkflowID(key), "error", rerr)
	}
	if err == nil {
		if cause := context.Cause(fctx); errors.Is(cause, ErrLeaseLost) {
			return cause
		}
	}
	return err
}

func (s *Store) acquire(ctx context.Context, key string) (Lease, error) {
	req := AcquireRequest{Holder: s.holder, Request: newRequestID(), TTL: s.ttl}
	backoff := minPoll
	for {
		resp, err := s.acquireOnce(ctx, key, req)
		var wait time.Duration
		switch {
		case err == nil && resp.Busy == nil:
			s.remember(key, State{Token: resp.Token})
			return resp.Lease, nil
		case err == nil:
			wait = resp.Busy.RetryIn
		case isType(err, ErrTypeBusy):
			var b Busy
			var ae *temporal.ApplicationError
			if errors.As(err, &ae) && ae.Details(&b) == nil {
				wait = b.RetryIn
			}
		default:
			if ctx.Err() != nil {
				return Lease{}, fmt.Errorf("waiting for the token keeper's lease: %w", ctx.Err())
			}
			s.log.Warn("asking the token keeper for its lease failed; retrying", "keeper", WorkflowID(key), "error", err, "backoff", backoff)
			wait = backoff
			backoff = min(2*backoff, 5*time.Second)
		}
		wait = min(max(wait, minPoll), maxPoll)
		wait = wait/2 + rand.N(wait/2+1) // jitter: holders polling at once spread out
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Lease{}, fmt.Errorf("waiting for the token keeper's lease: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func (s *Store) acquireOnce(ctx context.Context, key string, req AcquireRequest) (AcquireResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	start := s.tc.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       WorkflowID(key),
		TaskQueue:                s.queue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes:    kind.Of(kind.Keeper),
	}, WorkflowName, KeeperInput{Key: key, State: s.lastSeen(key)})
	h, err := s.tc.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID: WorkflowID(key), UpdateName: AcquireUpdate, Args: []any{req},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return AcquireResponse{}, err
	}
	var resp AcquireResponse
	err = h.Get(ctx, &resp)
	return resp, err
}

// renew extends the lease every third of its TTL until ctx ends; when the
// keeper says the lease is gone, or renewals keep failing until it would
// have expired, it cancels fn's context with ErrLeaseLost.
func (s *Store) renew(ctx context.Context, key string, lease Lease, cancel context.CancelCauseFunc) {
	every := s.ttl / 3
	lastOK := time.Now()
	for {
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		err := s.update(ctx, key, RenewUpdate, RenewRequest{LeaseID: lease.ID, TTL: s.ttl}, nil)
		switch {
		case err == nil:
			lastOK = time.Now()
		case ctx.Err() != nil:
			return
		case isType(err, ErrTypeLeaseLost) || time.Since(lastOK) >= s.ttl:
			s.log.Warn("the token keeper's lease was lost", "keeper", WorkflowID(key), "error", err)
			cancel(ErrLeaseLost)
			return
		default:
			s.log.Warn("renewing the token keeper's lease failed; retrying", "keeper", WorkflowID(key), "error", err)
		}
	}
}

func (s *Store) update(ctx context.Context, key, name string, arg, out any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	h, err := s.tc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: WorkflowID(key), UpdateName: name, Args: []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	if out == nil {
		return h.Get(ctx, nil)
	}
	return h.Get(ctx, out)
}

func isType(err error, typ string) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.Type() == typ
}

func newRequestID() string {
	var b [12]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}
