//go:build linux

package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/planner"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/workflows"
)

// benchFrom and benchTo are the seed's headline backfill (issue 8 §7).
const (
	benchFrom = "2016-01-01"
	benchTo   = "2026-08-31"
)

// benchQuota is the requests_per_day the benchmark's registry declares for
// the scopes the default registry declares unknown (KIS and ECOS, planned
// at defaults.unknown_limits = 1,000). Daily quotas are not time-scaled: at
// 1,000 a day KIS's 6,400 calls take ten provider-days whatever the rate
// scale, so a run that finishes in minutes needs a quota that holds the
// whole backfill and the day's reserved demand in one day. Every rate stays
// as declared.
const benchQuota = 20000

// benchRateScale is the rate scale of the simulator and the worker unless
// SLUICE_BENCH_RATE_SCALE says otherwise.
const benchRateScale = 10

// benchTolerance is the workers' --limiter-tolerance (and the planner's
// Tolerance) unless SLUICE_BENCH_TOLERANCE says otherwise: the default.
// (Before chained grants it was 500 ms: at rate scale 10 a KIS window is
// 100 ms, the limiter's round trips on a loaded box widened the default
// 50 ms for good to up to 2 s, and every KIS window then paid it. A
// worker's own KIS windows no longer pay the tolerance at all.)
const benchTolerance = ledger.DefaultTolerance

// writeBenchRegistry writes the default registry into dir with KIS's and
// ECOS's unknown daily quotas declared as benchQuota, and loads it.
func writeBenchRegistry(tb testing.TB, dir string) *registry.Registry {
	tb.Helper()
	dfs := registry.DefaultFS()
	err := fs.WalkDir(dfs, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if path.Ext(p) != ".yaml" {
			return nil
		}
		b, err := fs.ReadFile(dfs, p)
		if err != nil {
			return err
		}
		if p == "providers.yaml" {
			const unknown = "requests_per_day: unknown"
			if n := strings.Count(string(b), unknown); n != 2 {
				return fmt.Errorf("providers.yaml: want 2 unknown daily quotas (KIS, ECOS), found %d: update the benchmark's registry", n)
			}
			b = []byte(strings.ReplaceAll(string(b), unknown, "requests_per_day: "+strconv.Itoa(benchQuota)))
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		tb.Fatalf("writing the benchmark registry: %v", err)
	}
	r, err := registry.LoadDir(dir, registry.Options{})
	if err != nil {
		tb.Fatalf("loading the benchmark registry: %v", err)
	}
	return r
}

// backfillFigures are what one benchmark run measured.
type backfillFigures struct {
	scale         int
	tolerance     time.Duration // the workers' --limiter-tolerance
	plannedCalls  int
	oneCallPerDay int
	calls         int64         // every request the simulator saw
	tokenCalls    int64         // of which KIS token requests
	makespan      time.Duration // backfill start to its close
	predicted     time.Duration // the planner's makespan at the scaled declared rates
	chunks, ok    int
	failed        int
	maxHistory    int64 // the longest history of any workflow in the namespace
	maxHistoryID  string
	reported      int // the longest history the backfill's workflows reported
	runs          int
	rssKB         int64 // peak RSS (VmHWM) of the worker process
	violations    int64
	load          [2]float64 // load average at the start and the end
	// tripsP50, tripsP99 are the limiter round trips per provider call
	// the worker's gate counted (ratelimit.TripsMetric), median and 99th
	// percentile; tripsCalls the calls counted.
	tripsP50, tripsP99 int
	tripsCalls         int64
	// kisLagP50, kisLagP99 are the times from a KIS request's write to its
	// answer (metrics.AnswerLagMetric), median and 99th percentile.
	kisLagP50, kisLagP99 time.Duration
	// kisSendP50, kisSendP99 are the times from a KIS permit's send time
	// to its request's write (metrics.SendDelayMetric).
	kisSendP50, kisSendP99 time.Duration
	// serverCPU, workerCPU and simCPU are the CPU time (user and system)
	// the Temporal server's, the worker's and this process's (the
	// simulator's and the driver's) spent from the backfill's start to its
	// close.
	serverCPU, workerCPU, simCPU time.Duration
	// events and limiterEvents are the history events of every workflow
	// run in the namespace, and of the scope limiters' runs.
	events, limiterEvents int64
}

// BenchmarkBackfillDefaultRegistry runs the default registry's backfill
// over 2016-01-01..2026-08-31 (issue 8 §7) on the shared embedded Temporal
// server, by one real `sluice worker` process writing to a local lake in a
// temp dir, against the simulator, both at rate scale 10
// (SLUICE_BENCH_RATE_SCALE), with a registry whose KIS and ECOS daily
// quotas are declared (writeBenchRegistry). It reports the planned calls,
// the calls the simulator saw, how many times fewer they are than one call
// per dataset per day, the makespan over the planner's prediction (the
// bound of the planned calls at the declared rates, with the limiter's
// ledger arithmetic), the prediction's error, the longest workflow
// history, the worker's peak RSS and the simulator's violations, and
// prints them as a table.
func BenchmarkBackfillDefaultRegistry(b *testing.B) {
	scale := benchRateScale
	if v := os.Getenv("SLUICE_BENCH_RATE_SCALE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("SLUICE_BENCH_RATE_SCALE %q: want a positive integer", v)
		}
		scale = n
	}
	tol := benchTolerance
	if v := os.Getenv("SLUICE_BENCH_TOLERANCE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("SLUICE_BENCH_TOLERANCE %q: want a positive duration", v)
		}
		tol = d
	}
	regDir := b.TempDir()
	breg := writeBenchRegistry(b, regDir)
	var f backfillFigures
	for i := 0; i < b.N; i++ {
		f = runBackfillBench(b, breg, regDir, scale, tol)
	}
	ratio := float64(f.makespan) / float64(f.predicted)
	b.ReportMetric(float64(f.plannedCalls), "planned-calls")
	b.ReportMetric(float64(f.calls), "calls")
	b.ReportMetric(float64(f.oneCallPerDay)/float64(f.calls), "x-fewer-than-daily")
	b.ReportMetric(f.makespan.Seconds(), "makespan-s")
	b.ReportMetric(f.predicted.Seconds(), "predicted-s")
	b.ReportMetric(ratio, "makespan/bound")
	b.ReportMetric(f.predictionError(), "prediction-err-%")
	b.ReportMetric(float64(f.maxHistory), "max-history-events")
	b.ReportMetric(float64(f.rssKB)/1024, "peak-rss-MiB")
	b.ReportMetric(float64(f.violations), "violations")
	b.ReportMetric(float64(f.tripsP50), "trips/call-p50")
	b.ReportMetric(float64(f.tripsP99), "trips/call-p99")
	b.ReportMetric(float64(f.kisLagP50)/float64(time.Millisecond), "kis-answer-lag-p50-ms")
	b.ReportMetric(float64(f.kisSendP50)/float64(time.Millisecond), "kis-send-delay-p50-ms")
	if f.calls > 0 {
		b.ReportMetric(float64(f.serverCPU)/float64(time.Millisecond)/float64(f.calls), "server-cpu-ms/call")
		b.ReportMetric(float64(f.workerCPU)/float64(time.Millisecond)/float64(f.calls), "worker-cpu-ms/call")
		b.ReportMetric(float64(f.simCPU)/float64(time.Millisecond)/float64(f.calls), "sim-cpu-ms/call")
		b.ReportMetric(float64(f.events)/float64(f.calls), "events/call")
		b.ReportMetric(float64(f.limiterEvents)/float64(f.calls), "limiter-events/call")
	}
	printBackfillFigures(f)
	if f.violations != 0 {
		b.Errorf("the simulator counted %d violations", f.violations)
	}
	if f.failed != 0 || f.ok != f.chunks {
		b.Errorf("%d of %d chunks ok, %d failed", f.ok, f.chunks, f.failed)
	}
}

// runBackfillBench runs one backfill on a cluster of its own and measures
// it.
func runBackfillBench(b *testing.B, breg *registry.Registry, regDir string, scale int, tol time.Duration) backfillFigures {
	b.Helper()
	b.StopTimer()
	f := backfillFigures{scale: scale, tolerance: tol, load: [2]float64{loadAverage(), 0}}
	c := newCluster(b, clusterOptions{workers: 1, registry: breg, registryDir: regDir, rateScale: scale, metrics: true,
		workerArgs: []string{"--limiter-tolerance", tol.String()}})
	in := workflows.BackfillInput{From: benchFrom, To: benchTo}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	id := "backfill-bench"
	serverPID, workerPID := serverProc.Process.Pid, c.workers[0].pid()
	serverCPU0, workerCPU0, simCPU0 := processCPU(b, serverPID), processCPU(b, workerPID), processCPU(b, os.Getpid())
	b.StartTimer()
	began := time.Now()
	// The prediction `sluice plan` makes for a run starting now, at the
	// rate scale the worker runs at.
	plan, err := planner.Backfill(breg, planner.Input{From: mustDate(b, benchFrom), To: mustDate(b, benchTo),
		Start: began, RateScale: float64(scale), Tolerance: tol})
	if err != nil {
		b.Fatalf("planning the backfill: %v", err)
	}
	run, err := c.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: c.tq}, workflows.BackfillName, in)
	if err != nil {
		b.Fatalf("starting the backfill: %v", err)
	}
	done := make(chan struct{})
	go c.reportBackfill(ctx, id, done)
	var res workflows.BackfillProgress
	err = run.Get(ctx, &res)
	f.makespan = time.Since(began)
	f.serverCPU, f.workerCPU = processCPU(b, serverPID)-serverCPU0, processCPU(b, workerPID)-workerCPU0
	f.simCPU = processCPU(b, os.Getpid()) - simCPU0
	close(done)
	b.StopTimer()
	if err != nil {
		b.Fatalf("the backfill failed after %s: %v", f.makespan.Round(time.Second), err)
	}
	f.load[1] = loadAverage()
	f.plannedCalls = plan.Totals.Calls
	f.oneCallPerDay = plan.Totals.OneCallPerDay
	f.predicted = plan.Totals.Makespan
	f.chunks, f.ok, f.failed = res.Counts.Total, res.Counts.OK+res.Counts.NoData, res.Counts.Failed
	f.reported, f.runs = res.MaxHistory, res.Runs
	f.rssKB = peakRSS(b, c.workers[0].pid())
	lines := c.scrapeMetrics(c.workers[0])
	f.tripsP50, f.tripsP99, f.tripsCalls = c.trips(c.workers[0], lines)
	f.kisLagP50, f.kisLagP99 = c.kisQuantiles(c.workers[0], lines, metrics.AnswerLagMetric)
	f.kisSendP50, f.kisSendP99 = c.kisQuantiles(c.workers[0], lines, metrics.SendDelayMetric)
	st := c.sim.Stats()
	for _, p := range st.Providers {
		f.calls += p.Requests
	}
	for _, s := range st.Scopes {
		f.violations += s.Violations
		f.tokenCalls += s.TokenRequests
	}
	h := c.histories(ctx)
	f.maxHistory, f.maxHistoryID = h.longest, h.longestID
	f.events, f.limiterEvents = h.events, h.limiter
	return f
}

// reportBackfill prints the backfill's progress, with the requests each
// provider received so far, to standard error every 5 s until done
// closes, so a run that takes minutes shows it is alive.
func (c *cluster) reportBackfill(ctx context.Context, id string, done <-chan struct{}) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	began := time.Now()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		v, err := c.tc.QueryWorkflow(qctx, id, "", workflows.ProgressQuery)
		cancel()
		var p workflows.BackfillProgress
		if err == nil {
			err = v.Get(&p)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: progress: %v\n", time.Since(began).Round(time.Second), err)
			continue
		}
		// Each provider's requests as the simulator received them (the
		// progress counts a chunk's calls once it is recorded).
		var per []string
		st := c.sim.Stats()
		for _, pp := range p.Providers {
			var got int64
			if ps := st.Providers[pp.Provider]; ps != nil {
				got = ps.Requests
			}
			per = append(per, fmt.Sprintf("%s %d/%d", pp.Provider, got, pp.Counts.PlannedCalls))
		}
		fmt.Fprintf(os.Stderr, "bench: %s: %s, chunks %d/%d (failed %d), calls %d/%d (%s), load %.1f\n",
			time.Since(began).Round(time.Second), p.State, p.Counts.Done, p.Counts.Total, p.Counts.Failed,
			p.Counts.Calls, p.Counts.PlannedCalls, strings.Join(per, ", "), loadAverage())
	}
}

// histories are the history lengths of every workflow run in a namespace.
type histories struct {
	longest   int64  // the longest history
	longestID string // its workflow id
	events    int64  // every run's events together
	limiter   int64  // the scope limiters' runs' events together
}

// histories lists every workflow run in the cluster's namespace, open or
// closed, and adds up their history lengths.
func (c *cluster) histories(ctx context.Context) histories {
	c.t.Helper()
	var (
		h     histories
		token []byte
	)
	for {
		resp, err := c.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: c.ns, PageSize: 1000, NextPageToken: token})
		if err != nil {
			c.t.Fatalf("listing the workflows of %s: %v", c.ns, err)
		}
		for _, e := range resp.GetExecutions() {
			n := e.GetHistoryLength()
			h.events += n
			if e.GetType().GetName() == ratelimit.WorkflowName {
				h.limiter += n
			}
			if n > h.longest {
				h.longest, h.longestID = n, e.GetExecution().GetWorkflowId()
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return h
		}
	}
}

// peakRSS reads a process's peak resident set size (VmHWM) in KiB.
func peakRSS(tb testing.TB, pid int) int64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatalf("reading the worker's status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				tb.Fatalf("reading the worker's VmHWM %q: %v", v, err)
			}
			return n
		}
	}
	tb.Fatalf("the worker's /proc status has no VmHWM")
	return 0
}

// userHZ is the unit of /proc/PID/stat's CPU times: Linux's USER_HZ, 100
// on every architecture Go supports there.
const userHZ = 100

// processCPU reads the CPU time (user and system, all threads) a process
// has spent so far, from /proc/PID/stat.
func processCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatalf("reading process %d's CPU time: %v", pid, err)
	}
	// The command name (field 2) may hold spaces: count from after it.
	rest := string(b)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	fs := strings.Fields(rest) // fs[0] is field 3 (state): utime is fs[11], stime fs[12]
	if len(fs) < 13 {
		tb.Fatalf("process %d's /proc stat has %d fields after its name, want 13 or more", pid, len(fs))
	}
	var ticks int64
	for _, v := range fs[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			tb.Fatalf("reading process %d's CPU time %q: %v", pid, v, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ
}

// loadAverage is the one-minute load average, 0 if unreadable.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	fs := strings.Fields(string(b))
	if len(fs) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(fs[0], 64)
	return v
}

// predictionError is how far the planner's makespan is from the measured
// one, in percent of the measured one.
func (f backfillFigures) predictionError() float64 {
	return 100 * math.Abs(float64(f.makespan-f.predicted)) / float64(f.makespan)
}

// printBackfillFigures prints the figures as the table docs/backfill.md
// shows.
func printBackfillFigures(f backfillFigures) {
	ratio := float64(f.makespan) / float64(f.predicted)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nbackfill %s..%s, default registry (KIS and ECOS quotas declared %d/day), rate scale %d, limiter tolerance %s, 1 worker\n", benchFrom, benchTo, benchQuota, f.scale, f.tolerance)
	fmt.Fprintf(w, "figure\tvalue\tgoal\n")
	fmt.Fprintf(w, "planned calls\t%d\t\n", f.plannedCalls)
	fmt.Fprintf(w, "calls made (simulator)\t%d (%d of them token requests)\t= planned\n", f.calls, f.tokenCalls)
	fmt.Fprintf(w, "one call per dataset per day\t%d (%.1f× the calls made)\t≥ 50×\n", f.oneCallPerDay, float64(f.oneCallPerDay)/float64(f.calls))
	fmt.Fprintf(w, "chunks ok / total\t%d / %d (%d failed)\t\n", f.ok, f.chunks, f.failed)
	fmt.Fprintf(w, "makespan (start to close)\t%s\t\n", f.makespan.Round(100*time.Millisecond))
	fmt.Fprintf(w, "bound: planner prediction\t%s\t\n", f.predicted.Round(100*time.Millisecond))
	fmt.Fprintf(w, "makespan ÷ bound\t%.3f\t≤ 1.06 (issue 20)\n", ratio)
	fmt.Fprintf(w, "prediction error of sluice plan\t%.1f%% of the makespan\t≤ 6%% (issue 20)\n", f.predictionError())
	fmt.Fprintf(w, "largest history\t%d events (%s); the backfill reported %d, %d run(s) of the parent\t≤ 10,240\n", f.maxHistory, f.maxHistoryID, f.reported, f.runs)
	fmt.Fprintf(w, "peak worker RSS\t%.0f MiB\t\n", float64(f.rssKB)/1024)
	fmt.Fprintf(w, "violations (simulator)\t%d\t0\n", f.violations)
	fmt.Fprintf(w, "limiter round trips per call (median, p99)\t%d, %d over %d calls\t\n", f.tripsP50, f.tripsP99, f.tripsCalls)
	fmt.Fprintf(w, "KIS write to answer (median, p99; bucket bounds)\t%s, %s\t\n", f.kisLagP50, f.kisLagP99)
	fmt.Fprintf(w, "KIS permit's send time to write (median, p99)\t%s, %s\t\n", f.kisSendP50, f.kisSendP99)
	fmt.Fprintf(w, "load average (1 min) at start / end\t%.1f / %.1f on %d cores\t\n", f.load[0], f.load[1], runtime.NumCPU())
	if f.calls > 0 && f.makespan > 0 {
		cores := func(d time.Duration) float64 { return float64(d) / float64(f.makespan) }
		perCall := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(f.calls) }
		for _, p := range []struct {
			name string
			cpu  time.Duration
		}{{"Temporal server", f.serverCPU}, {"worker", f.workerCPU}, {"simulator and driver", f.simCPU}} {
			fmt.Fprintf(w, "CPU of the %s\t%s (%.2f cores, %.1f ms a call)\t\n", p.name, p.cpu.Round(time.Second), cores(p.cpu), perCall(p.cpu))
		}
		fmt.Fprintf(w, "history events, all workflows (scope limiters)\t%d (%d): %.1f (%.1f) a call\t\n",
			f.events, f.limiterEvents, float64(f.events)/float64(f.calls), float64(f.limiterEvents)/float64(f.calls))
	}
	_ = w.Flush()
}

// tripsBucketRe matches one bucket of the gate's round-trips-per-call
// histogram.
var tripsBucketRe = regexp.MustCompile(`^` + ratelimit.TripsMetric + `_bucket\{le="([^"]+)"\} (\S+)$`)

// trips reads the limiter round trips a worker's gate's calls took from
// its /metrics lines: the median and 99th percentile (the least bucket
// bound at or above the nearest rank: exact up to 16), and how many calls;
// -1 beyond the last bound.
func (c *cluster) trips(w *workerProc, lines []string) (p50, p99 int, calls int64) {
	buckets := c.histogram(w, lines, tripsBucketRe)
	if len(buckets) == 0 {
		return 0, 0, 0
	}
	return int(quantile(buckets, 0.5)), int(quantile(buckets, 0.99)), buckets[len(buckets)-1].cum
}

// kisBucketRe matches a bucket of kis/key's series of the histogram name.
func kisBucketRe(name string) *regexp.Regexp {
	return regexp.MustCompile(`^` + name + `_bucket\{scope="kis/key",le="([^"]+)"\} (\S+)$`)
}

// kisQuantiles reads from a worker's /metrics lines the median and 99th
// percentile (bucket bounds) of kis/key's series of a histogram in seconds
// — metrics.AnswerLagMetric (a request's write to its answer, what each
// chained window pays) or metrics.SendDelayMetric (a permit's send time to
// its request's write).
func (c *cluster) kisQuantiles(w *workerProc, lines []string, name string) (p50, p99 time.Duration) {
	buckets := c.histogram(w, lines, kisBucketRe(name))
	if len(buckets) == 0 {
		return 0, 0
	}
	sec := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	return sec(quantile(buckets, 0.5)), sec(quantile(buckets, 0.99))
}

// histBucket is one cumulative bucket of a Prometheus histogram.
type histBucket struct {
	le  float64
	cum int64
}

// histogram returns, in order, the buckets of the histogram whose bucket
// lines re matches (bound and count submatches) among a worker's /metrics
// lines.
func (c *cluster) histogram(w *workerProc, lines []string, re *regexp.Regexp) []histBucket {
	c.t.Helper()
	var buckets []histBucket
	for _, line := range lines {
		s := re.FindStringSubmatch(line)
		if s == nil {
			continue
		}
		le, err1 := strconv.ParseFloat(s[1], 64)
		n, err2 := strconv.ParseFloat(s[2], 64)
		if err1 != nil || err2 != nil {
			c.t.Fatalf("%s: unreadable sample %q", w.name, line)
		}
		buckets = append(buckets, histBucket{le, int64(n)})
	}
	return buckets
}

// quantile is the least bucket bound at or above the nearest rank of q;
// -1 beyond the last bound, 0 for an empty histogram.
func quantile(buckets []histBucket, q float64) float64 {
	if len(buckets) == 0 {
		return 0
	}
	total := buckets[len(buckets)-1].cum // le="+Inf"
	rank := max(int64(math.Ceil(q*float64(total))), 1)
	for _, bk := range buckets {
		if bk.cum >= rank {
			if math.IsInf(bk.le, 1) {
				return -1 // beyond the last bound
			}
			return bk.le
		}
	}
	return -1
}
