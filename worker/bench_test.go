package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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
	simURLs []string // one a worker: the simulator tells them apart
	reg     *registry.Registry
	workers []*worker.Worker

	mu  sync.Mutex
	kis []arrival // each KIS data call, as the simulator received it
}

// arrival is a KIS data call as the simulator received it: when, and from
// which worker.
type arrival struct {
	at     time.Time
	worker int
}

// kisDataCall reports whether a request to the simulator is a KIS data
// call: KIS's requests carry an appkey header, and its token endpoints
// are under /oauth2/.
func kisDataCall(r *http.Request) bool {
	return r.Header.Get("appkey") != "" && !strings.HasPrefix(r.URL.Path, "/oauth2/")
}

// oneToken is a token store that keeps every token under one key: the
// bench's workers reach the simulator at addresses of their own (so that
// an arrival names its worker) and would otherwise each be issued a KIS
// token, which the simulator refuses more than once a minute.
type oneToken struct{ connector.TokenStore }

const oneTokenKey = "bench"

func (o oneToken) Load(ctx context.Context, _ string) (connector.Token, bool, error) {
	return o.TokenStore.Load(ctx, oneTokenKey)
}

func (o oneToken) Save(ctx context.Context, _ string, t connector.Token) error {
	return o.TokenStore.Save(ctx, oneTokenKey, t)
}

func (o oneToken) WithLock(ctx context.Context, _ string, fn func(ctx context.Context) error) error {
	return o.TokenStore.WithLock(ctx, oneTokenKey, fn)
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
	// The KIS data calls' arrivals tell the batch's makespan apart into
	// the wait for the first KIS call, the KIS calls' own span (the bound
	// is 19.8 s) and the tail after the last; each worker has a listener
	// of its own, so that an arrival names the worker that sent it.
	listeners := 1
	if tk == sharedFile {
		// One KIS token for all: the file store keys tokens by base URL
		// (oneToken).
		listeners = n
	}
	for i := range listeners {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if kisDataCall(r) {
				s.mu.Lock()
				s.kis = append(s.kis, arrival{at: time.Now(), worker: i})
				s.mu.Unlock()
			}
			s.sim.Handler().ServeHTTP(w, r)
		})
		hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = hs.Serve(ln) }()
		b.Cleanup(func() { _ = hs.Close() })
		s.simURLs = append(s.simURLs, "http://"+ln.Addr().String())
	}
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
	for i := range n {
		opts := worker.Options{
			Client: dial(), Config: activities.Config{Registry: reg, Sink: lake, Logger: workerLog(b, quiet, i), RateScale: scale,
				BaseURLs:    map[string]string{"*": s.simURLs[i%len(s.simURLs)]},
				Credentials: connector.MapCredentials(simulator.TestCredentials(reg))},
		}
		switch tk {
		case sharedFile:
			opts.TokenStore = oneToken{file}
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
	var windows kisWindows
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
			first += s.kis[0].at.Sub(began)
			span += s.kis[n-1].at.Sub(s.kis[0].at)
			tail += began.Add(elapsed).Sub(s.kis[n-1].at)
			windows.add(s.kis)
			traceKIS(b, s.kis)
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
	if len(s.simURLs) == len(s.workers) {
		// Arrivals name their workers only with a listener each (the
		// shared token file; the token keepers key by base URL too).
		windows.report(b)
	}
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

// kisWindows tells where the KIS calls' span goes beyond their windows:
// for each call, how much more than KIS's window (1 s) after the call
// five before it it arrived, apart for the calls whose call five before
// came from the same worker (a process's own chain) and from another.
type kisWindows struct {
	same, other     int
	sameEx, otherEx time.Duration
}

func (k *kisWindows) add(calls []arrival) {
	const count, length = 5, time.Second
	calls = slices.Clone(calls)
	slices.SortFunc(calls, func(a, b arrival) int { return a.at.Compare(b.at) })
	for i := count; i < len(calls); i++ {
		ex := max(calls[i].at.Sub(calls[i-count].at)-length, 0)
		if calls[i].worker == calls[i-count].worker {
			k.same++
			k.sameEx += ex
		} else {
			k.other++
			k.otherEx += ex
		}
	}
}

// workerLog is worker i's logger: at debug level into the file
// SLUICE_BENCH_LOG names (with the worker's index), if any; otherwise
// quiet.
func workerLog(b *testing.B, quiet *slog.Logger, i int) *slog.Logger {
	path := os.Getenv("SLUICE_BENCH_LOG")
	if path == "" {
		return quiet
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", path, i))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// traceKIS writes the KIS arrivals, one line a call (milliseconds since
// the first, worker), to the file SLUICE_BENCH_KIS_TRACE names, if any.
func traceKIS(b *testing.B, calls []arrival) {
	path := os.Getenv("SLUICE_BENCH_KIS_TRACE")
	if path == "" {
		return
	}
	var buf strings.Builder
	for _, c := range calls {
		fmt.Fprintf(&buf, "%.1f %d\n", float64(c.at.Sub(calls[0].at).Microseconds())/1000, c.worker)
	}
	if err := os.WriteFile(path, []byte(buf.String()), 0o644); err != nil {
		b.Error(err)
	}
}

func (k *kisWindows) report(b *testing.B) {
	b.ReportMetric(float64(k.other)/float64(max(k.same+k.other, 1)), "kis-windows-from-other")
	b.ReportMetric(float64(k.sameEx.Milliseconds())/float64(max(k.same, 1)), "kis-window-excess-own-ms")
	b.ReportMetric(float64(k.otherEx.Milliseconds())/float64(max(k.other, 1)), "kis-window-excess-other-ms")
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
