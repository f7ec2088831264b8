package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/codec"
	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/tokenkeeper"
	"github.com/sluicehq/sluice/worker"
	"github.com/sluicehq/sluice/workflows"
)

// The seed write-up's figures for its 189-endpoint batch: 17.0 s measured,
// while its own declared limits imply at least 19.8 s (KIS: 100 calls at
// 5/s, evenly spaced: 99 × 0.2 s).
const (
	seedReportedSeconds = 17.0
	lowerBoundSeconds   = 19.8
)

type stack struct {
	tc      client.Client
	sim     *simulator.Simulator
	simURL  string
	reg     *registry.Registry
	workers []*worker.Worker

	mu  sync.Mutex
	kis []time.Time // when the simulator received each KIS data call
}

// kisDataCall reports whether a request to the simulator is a KIS data
// call: KIS's requests carry an appkey header, and its token endpoints
// are under /oauth2/.
func kisDataCall(r *http.Request) bool {
	return r.Header.Get("appkey") != "" && !strings.HasPrefix(r.URL.Path, "/oauth2/")
}

// tokens says where a stack's workers keep KIS tokens.
type tokens int

const (
	sharedFile tokens = iota // one file store for all: one machine
	keepers                  // the token keepers, sealed: no shared filesystem
)

// newStack starts an embedded Temporal server, the simulator at the given
// rate scale and n workers (each with its own Temporal client and limiter
// client, as separate processes would have) over one local lake, keeping
// KIS tokens as tk says, the simulator injecting faults.
func newStack(b *testing.B, scale float64, n int, tk tokens, faults ...simulator.Fault) *stack {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	srv, err := embedded.Start(ctx, embedded.Options{DataDir: b.TempDir(), FrontendAddr: "127.0.0.1:0", UIAddr: embedded.UIOff, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Stop() })
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s := &stack{reg: reg}
	if s.sim, err = simulator.New(simulator.Options{Registry: reg, RateScale: scale, Faults: faults}); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	// The KIS data calls' arrivals tell the batch's makespan apart into
	// the wait for the first KIS call, the KIS calls' own span (the bound
	// is 19.8 s) and the tail after the last.
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if kisDataCall(r) {
			s.mu.Lock()
			s.kis = append(s.kis, time.Now())
			s.mu.Unlock()
		}
		s.sim.Handler().ServeHTTP(w, r)
	})
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	b.Cleanup(func() { _ = hs.Close() })
	s.simURL = "http://" + ln.Addr().String()
	lake, err := sink.NewLocal(filepath.Join(b.TempDir(), "lake"))
	if err != nil {
		b.Fatal(err)
	}
	copts := client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace(), Logger: nopLogger{}}
	dial := func() client.Client {
		tc, err := client.Dial(copts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(tc.Close)
		return tc
	}
	s.tc = dial()
	file, err := tokenstore.NewFile(filepath.Join(b.TempDir(), "tokens"))
	if err != nil {
		b.Fatal(err)
	}
	key, _ := codec.NewKey()
	ring, err := codec.ParseKeyring("bench", key)
	if err != nil {
		b.Fatal(err)
	}
	cd, _ := codec.New(ring)
	for range n {
		opts := worker.Options{
			Client: dial(), Config: activities.Config{Registry: reg, Sink: lake, Logger: quiet, RateScale: scale,
				BaseURLs:    map[string]string{"*": s.simURL},
				Credentials: connector.MapCredentials(simulator.TestCredentials(reg))},
		}
		switch tk {
		case sharedFile:
			opts.TokenStore = file
		case keepers:
			kc, err := tokenkeeper.SealingClient(context.Background(), opts.Client, copts, cd)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(kc.Close)
			opts.TokenKeeper = kc
		}
		w, err := worker.Start(opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(w.Stop)
		s.workers = append(s.workers, w)
	}
	return s
}

func (s *stack) batch(b *testing.B, date string, providers []string) (workflows.DailyIngestResult, time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	run, err := s.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.DailyWorkflowID(date), TaskQueue: worker.DefaultTaskQueue},
		workflows.DailyIngestName, workflows.DailyIngestInput{Date: date, Providers: providers})
	if err != nil {
		b.Fatal(err)
	}
	var res workflows.DailyIngestResult
	if err := run.Get(ctx, &res); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	if res.Failed > 0 {
		b.Fatalf("batch %s: %d datasets failed: %+v", date, res.Failed, res.Results)
	}
	return res, elapsed
}

// tokenRequests counts the simulator's KIS token requests and refusals.
func (s *stack) tokenRequests() (requests, refused int64) {
	for _, sc := range s.sim.Stats().Scopes {
		requests += sc.TokenRequests
		refused += sc.TokenRejected
	}
	return requests, refused
}

func (s *stack) violations() int64 {
	var v int64
	for _, sc := range s.sim.Stats().Scopes {
		v += sc.Violations
	}
	return v
}

// seedProviders are the seed's four providers: its 189 endpoints.
var seedProviders = []string{"kis", "ecos", "fred", "upbit"}

// benchmarkMakespan runs the seed's 189-endpoint batch at the seed's
// declared rates, time-scaled by the simulator's rate scale, and reports its
// makespan (scaled back to real time) against the lower bound the limits
// allow, with the simulator's violation count and KIS token requests.
func benchmarkMakespan(b *testing.B, workers int, tk tokens) {
	const scale = 1
	s := newStack(b, scale, workers, tk)
	var total, first, span, tail time.Duration
	retried := 0
	b.ResetTimer()
	for i := range b.N {
		s.mu.Lock()
		s.kis = s.kis[:0]
		s.mu.Unlock()
		began := time.Now()
		res, elapsed := s.batch(b, fmt.Sprintf("2026-10-%02d", 1+i%28), seedProviders)
		total += elapsed
		s.mu.Lock()
		if n := len(s.kis); n > 0 {
			first += s.kis[0].Sub(began)
			span += s.kis[n-1].Sub(s.kis[0])
			tail += began.Add(elapsed).Sub(s.kis[n-1])
		}
		s.mu.Unlock()
		for _, r := range res.Results {
			if r.Attempts > 1 {
				retried++
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(retried)/float64(b.N), "retried-datasets")
	makespan := total.Seconds() / float64(b.N) * scale
	b.ReportMetric(makespan, "makespan-s")
	b.ReportMetric(makespan/lowerBoundSeconds, "ratio-to-bound")
	b.ReportMetric(lowerBoundSeconds, "bound-s")
	b.ReportMetric(seedReportedSeconds, "seed-s")
	// Where the makespan went: until the first KIS data call reached the
	// simulator, between the first and the last, and after the last.
	b.ReportMetric(first.Seconds()/float64(b.N), "kis-first-s")
	b.ReportMetric(span.Seconds()/float64(b.N), "kis-span-s")
	b.ReportMetric(tail.Seconds()/float64(b.N), "kis-tail-s")
	b.ReportMetric(float64(s.violations()), "violations")
	requests, refused := s.tokenRequests()
	b.ReportMetric(float64(requests), "token-requests")
	var late, updates, latePermits int64
	var trips []*ratelimit.TripCounts
	for _, w := range s.workers {
		st := w.Limiter().Stats()
		late += st.LateBatch
		updates += st.Updates
		latePermits += st.LatePermits
		trips = append(trips, w.Gate().Trips())
	}
	b.ReportMetric(float64(late), "late-batches")
	b.ReportMetric(float64(updates), "limiter-updates")
	b.ReportMetric(float64(latePermits), "late-permits")
	// Round trips to the limiters per provider call, over the workers'
	// gates.
	all := (*ratelimit.TripCounts)(nil).Merge(trips...)
	b.ReportMetric(float64(all.Quantile(0.5)), "trips/call-p50")
	b.ReportMetric(float64(all.Quantile(0.99)), "trips/call-p99")
	b.ReportMetric(float64(all.Quantile(1)), "trips/call-max")
	if v := s.violations(); v != 0 {
		b.Errorf("simulator counted %d violations", v)
	}
	if requests != 1 || refused != 0 {
		b.Errorf("the KIS token endpoint was asked %d times and refused %d; want once, never refused", requests, refused)
	}
}

func BenchmarkDailyBatchMakespan(b *testing.B)         { benchmarkMakespan(b, 1, sharedFile) }
func BenchmarkDailyBatchMakespan3Workers(b *testing.B) { benchmarkMakespan(b, 3, sharedFile) }

// BenchmarkDailyBatchMakespan3WorkersTokenKeeper: three workers that share
// no filesystem — each its own Temporal connection and token-keeper
// worker, KIS tokens in the keepers — on the same batch.
func BenchmarkDailyBatchMakespan3WorkersTokenKeeper(b *testing.B) { benchmarkMakespan(b, 3, keepers) }

// BenchmarkKISBackoff3Workers measures the backoff against a declaration
// that is too generous: the simulator's KIS accepts 2 calls
// in any second of the 5 the registry declares (reject-at=0.5), three
// workers run the 100-dataset KIS batch at rate scale 1 (real time). At
// the true limit the batch takes 49 s (pairs of calls a second). It
// reports the makespan, its ratio to that, and the rejections; every
// rejection must be a penalty of the KIS limiter and a ratelimit.backoff
// event, and none may be a violation of the declared limits.
func BenchmarkKISBackoff3Workers(b *testing.B) {
	const trueLimitSeconds = 49.0
	s := newStack(b, 1, 3, sharedFile, simulator.Fault{Provider: "kis", RejectAtFraction: 0.5})
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		_, elapsed := s.batch(b, fmt.Sprintf("2026-08-%02d", 1+i%28), []string{"kis"})
		total += elapsed
	}
	b.StopTimer()
	makespan := total.Seconds() / float64(b.N)
	st := s.sim.Stats().Scopes["kis/key"]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lim, err := s.workers[0].Limiter().State(ctx, "kis/key")
	if err != nil {
		b.Fatal(err)
	}
	evs, err := events.List(ctx, s.tc)
	if err != nil {
		b.Fatal(err)
	}
	backoffs := 0
	for _, e := range evs {
		if e.Kind == events.KindBackoff && e.Scope == "kis/key" {
			backoffs++
		}
	}
	b.ReportMetric(makespan, "makespan-s")
	b.ReportMetric(makespan/trueLimitSeconds, "ratio-to-true-limit")
	b.ReportMetric(float64(st.RejectedByFault)/float64(b.N), "rejections/batch")
	b.ReportMetric(lim.Factor, "final-factor")
	if st.Violations != 0 {
		b.Errorf("the simulator counted %d violations of the declared limits", st.Violations)
	}
	if lim.Ledger.Penalties != st.RejectedByFault || int64(backoffs) != st.RejectedByFault {
		b.Errorf("%d rejections, %d penalties, %d backoff events: each rejection must be both", st.RejectedByFault, lim.Ledger.Penalties, backoffs)
	}
}

// BenchmarkOrchestrationOverhead compares the time per job of Sluice's
// daily batch, with limits far from binding, against a bare Temporal
// fan-out of the same number of no-op activities on the same server in the
// same run. The difference is what Sluice adds per job: planning, limiter
// permits, the fetch from the simulator, zstd and the lake write.
func BenchmarkOrchestrationOverhead(b *testing.B) {
	s := newStack(b, 1000, 1, sharedFile)
	w := sdkworker.New(s.tc, "bare", sdkworker.Options{})
	w.RegisterWorkflowWithOptions(bareFanOut, workflow.RegisterOptions{Name: "BareFanOut"})
	w.RegisterActivityWithOptions(func(context.Context) error { return nil }, activityName("Noop"))
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var sluice, bare time.Duration
	jobs := 0
	b.ResetTimer()
	for i := range b.N {
		res, elapsed := s.batch(b, fmt.Sprintf("2026-09-%02d", 1+i%28), seedProviders)
		sluice += elapsed
		jobs += len(res.Results)
		start := time.Now()
		run, err := s.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("bare-%d", i), TaskQueue: "bare"}, "BareFanOut", len(res.Results))
		if err != nil {
			b.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			b.Fatal(err)
		}
		bare += time.Since(start)
	}
	b.StopTimer()
	perSluice := sluice.Seconds() * 1000 / float64(jobs)
	perBare := bare.Seconds() * 1000 / float64(jobs)
	b.ReportMetric(perSluice, "sluice-ms/job")
	b.ReportMetric(perBare, "bare-ms/job")
	b.ReportMetric(perSluice-perBare, "overhead-ms/job")
	b.ReportMetric(float64(jobs)/bare.Seconds(), "bare-activities/s")
}

func bareFanOut(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	fs := make([]workflow.Future, n)
	for i := range fs {
		fs[i] = workflow.ExecuteActivity(ctx, "Noop")
	}
	for _, f := range fs {
		if err := f.Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}
