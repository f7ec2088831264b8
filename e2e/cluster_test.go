//go:build linux

package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/internal/versitygw"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
	"github.com/sluicehq/sluice/workflows"
)

// rateScale speeds the simulator and the workers' limiters up together.
const rateScale = 10

// batchTimeout bounds one batch. Generous: a SIGKILLed worker's
// activities wait out their heartbeat timeout, and a provider that is down
// is retried with backoff until the retry policy gives up.
const batchTimeout = 6 * time.Minute

// clusterOptions shape a test's Sluice.
type clusterOptions struct {
	workers int
	faults  []simulator.Fault
	s3      bool // lake on versitygw instead of the local lake
	metrics bool // workers serve /metrics (address read from their log)
	// registryDir is a registry the simulator and the workers load
	// instead of the default one (registry its loaded form); rateScale
	// replaces the package's rateScale when not 0.
	registryDir string
	registry    *registry.Registry
	rateScale   int
	// ownDirs gives every worker a data directory of its own, as workers
	// on separate machines have (their local lakes differ too).
	ownDirs bool
	// workerArgs and workerEnv are added to every worker's command line
	// and environment.
	workerArgs, workerEnv []string
	// temporal is the frontend host:port of a Temporal server of the
	// test's own; "" for the shared one.
	temporal string
	// listen is the address the simulator and versitygw listen on; ""
	// for 127.0.0.1. Workers on hosts of their own (internal/netns)
	// reach the root namespace at its bridge address only.
	listen string
	// command makes worker n's process of bin and args; nil runs it
	// here (exec.Command). Workers on hosts of their own run inside
	// their namespace.
	command func(n int, bin string, args []string) *exec.Cmd
}

// cluster is one test's Sluice: a namespace and task queue on the shared
// Temporal server, a simulator, a lake and worker processes.
type cluster struct {
	t        testing.TB
	ns, tq   string
	tc       client.Client
	sim      *simulator.Simulator
	simURL   string
	dataDir  string
	logDir   string
	s3       *versitygw.Server
	requests *requestLog // when the simulator answered each dataset
	metrics  bool
	opts     clusterOptions
	workers  []*workerProc
	regDir   string // --registry of the workers; "" for the default
	scale    int    // the rate scale of the simulator and the workers
	addr     string // the Temporal frontend's host:port
	// otherKeys are lake objects checkLake accepts besides the batch's
	// (a backfill's, written alongside it).
	otherKeys map[string]bool
}

var clusterSeq atomic.Int64

// newCluster registers a namespace of the test's own, starts a simulator
// with the faults, and the worker processes.
func newCluster(t testing.TB, opts clusterOptions) *cluster {
	t.Helper()
	env(t)
	c := &cluster{t: t, dataDir: t.TempDir(), logDir: t.TempDir(), metrics: opts.metrics, opts: opts, regDir: opts.registryDir, scale: rateScale, addr: temporalAddr}
	if opts.temporal != "" {
		c.addr = opts.temporal
	}
	if opts.rateScale > 0 {
		c.scale = opts.rateScale
	}
	simReg := reg
	if opts.registry != nil {
		simReg = opts.registry
	}
	name := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-"))
	c.ns = fmt.Sprintf("e2e-%d-%s", clusterSeq.Add(1), name)
	c.tq = "sluice-" + name
	c.registerNamespace()

	tc, err := client.Dial(client.Options{HostPort: c.addr, Namespace: c.ns, Logger: quietLogger{}})
	if err != nil {
		t.Fatalf("connecting to Temporal: %v", err)
	}
	t.Cleanup(tc.Close)
	c.tc = tc
	// The backfill's search attributes, as the embedded server registers
	// them on its default namespace.
	actx, acancel := context.WithTimeout(context.Background(), time.Minute)
	_, err = tc.OperatorService().AddSearchAttributes(actx, &operatorservice.AddSearchAttributesRequest{Namespace: c.ns, SearchAttributes: embedded.SearchAttributes})
	acancel()
	if err != nil {
		t.Fatalf("registering search attributes on %s: %v", c.ns, err)
	}

	c.requests = newRequestLog()
	sim, err := simulator.New(simulator.Options{Registry: simReg, RateScale: float64(c.scale), Seed: simSeed, Faults: opts.faults,
		Logger: slog.New(c.requests)})
	if err != nil {
		t.Fatalf("creating the simulator: %v", err)
	}
	// Start serves until ctx ends: the test's whole life.
	listen := "127.0.0.1"
	if opts.listen != "" {
		listen = opts.listen
	}
	if c.simURL, err = sim.Start(context.Background(), net.JoinHostPort(listen, "0")); err != nil {
		t.Fatalf("starting the simulator: %v", err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	c.sim = sim

	if opts.s3 {
		c.s3 = versitygw.StartOn(t, listen)
	}
	// Registered before the workers' own cleanups, so it runs after them:
	// the logs are complete when printed. $SLUICE_E2E_WORKER_LOGS set
	// prints them after a passing test too (their warnings: stalls,
	// widened tolerances).
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("SLUICE_E2E_WORKER_LOGS") != "" {
			for _, w := range c.workers {
				b, _ := os.ReadFile(w.log)
				t.Logf("---- %s (pid %d) log ----\n%s", w.name, w.pid(), b)
			}
		}
	})
	for i := range opts.workers {
		c.startWorker(i + 1)
	}
	c.waitPollers(opts.workers)
	return c
}

// registerNamespace creates the test's namespace and waits until it
// answers.
func (c *cluster) registerNamespace() {
	c.t.Helper()
	nc, err := client.NewNamespaceClient(client.Options{HostPort: c.addr, Logger: quietLogger{}})
	if err != nil {
		c.t.Fatalf("connecting to Temporal: %v", err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        c.ns,
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	if err != nil {
		c.t.Fatalf("registering namespace %s: %v", c.ns, err)
	}
	for {
		if _, err = nc.Describe(ctx, c.ns); err == nil {
			return
		}
		var nf *serviceerror.NamespaceNotFound
		if !errors.As(err, &nf) || ctx.Err() != nil {
			c.t.Fatalf("waiting for namespace %s: %v", c.ns, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// workerProc is one `sluice worker` process.
type workerProc struct {
	name    string
	dataDir string
	cmd     *exec.Cmd
	log     string
	done    chan struct{}
	killed  atomic.Bool // by the test, on purpose
	bin     string      // the binary it runs
}

func (w *workerProc) pid() int { return w.cmd.Process.Pid }

func (w *workerProc) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// startWorker runs `sluice worker` against the cluster.
func (c *cluster) startWorker(n int) *workerProc {
	c.t.Helper()
	return c.startWorkerBin(n, sluiceBin, nil)
}

// startWorkerBin runs `sluice worker` of the binary bin against the
// cluster, with env added to its environment.
func (c *cluster) startWorkerBin(n int, bin string, env []string) *workerProc {
	c.t.Helper()
	metricsAddr := ""
	logLevel := "warn"
	if c.metrics {
		// The worker logs the address it listens on at info level.
		metricsAddr, logLevel = "127.0.0.1:0", "info"
	}
	dataDir := c.dataDir
	if c.opts.ownDirs {
		dataDir = c.t.TempDir()
	}
	args := []string{"worker",
		"--temporal", c.addr, "--namespace", c.ns, "--task-queue", c.tq,
		"--base-url", c.simURL, "--sim-credentials", "--rate-scale", strconv.Itoa(c.scale),
		"--data-dir", dataDir, "--metrics-addr", metricsAddr, "--log-level", logLevel,
	}
	if c.regDir != "" {
		args = append([]string{"--registry", c.regDir}, args...)
	}
	args = append(args, c.opts.workerArgs...)
	envv := append(append(cleanEnv(), c.opts.workerEnv...), env...)
	if c.s3 != nil {
		args = append(args, "--s3-bucket", c.s3.Bucket, "--s3-endpoint", c.s3.Endpoint, "--s3-region", c.s3.Region)
		envv = append(envv, "AWS_ACCESS_KEY_ID="+c.s3.AccessKey, "AWS_SECRET_ACCESS_KEY="+c.s3.SecretKey,
			"AWS_EC2_METADATA_DISABLED=true")
	}
	w := &workerProc{name: fmt.Sprintf("worker-%d", n), log: filepath.Join(c.logDir, fmt.Sprintf("worker-%d.log", n)), done: make(chan struct{}), dataDir: dataDir, bin: bin}
	f, err := os.Create(w.log)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.opts.command != nil {
		w.cmd = c.opts.command(n, bin, args)
	} else {
		w.cmd = exec.Command(bin, args...)
	}
	w.cmd.Env = envv
	w.cmd.Stdout, w.cmd.Stderr = f, f
	// The kernel kills the worker if the test process dies first.
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := w.cmd.Start(); err != nil {
		f.Close()
		c.t.Fatalf("starting %s: %v", w.name, err)
	}
	go func() {
		_ = w.cmd.Wait()
		f.Close()
		close(w.done)
	}()
	c.t.Cleanup(func() {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.done
		}
	})
	c.workers = append(c.workers, w)
	return w
}

// cleanEnv is the test's environment without Sluice's and AWS's
// variables, so that nothing outside the test configures the workers.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SLUICE_") || strings.HasPrefix(kv, "AWS_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// stop SIGTERMs a worker and waits for it to exit. A worker of this
// build on a local lake leaves none of the temporary files it was
// writing: a graceful stop aborts the writes it interrupts before the
// process exits (worker.Stop). It returns those files.
func (c *cluster) stop(w *workerProc) []string {
	c.t.Helper()
	var writing []string
	if c.s3 == nil && w.bin == sluiceBin {
		writing = openTemps(w, filepath.Join(w.dataDir, "lake"))
	}
	w.killed.Store(true) // its exit is expected
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatalf("stopping %s: %v", w.name, err)
	}
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		c.t.Fatalf("%s did not stop within 30 s of SIGTERM", w.name)
	}
	for _, p := range writing {
		// Renamed into place (committed) or removed (aborted): either
		// way gone from its temporary name.
		if _, err := os.Stat(p); err == nil {
			c.t.Errorf("%s, stopped with SIGTERM, left its temporary file %s in the lake", w.name, p)
		}
	}
	return writing
}

// kill SIGKILLs a worker, as a crash would, and waits for it to be gone.
func (c *cluster) kill(w *workerProc) {
	c.t.Helper()
	w.killed.Store(true)
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatalf("killing %s: %v", w.name, err)
	}
	<-w.done
}

// checkWorkers fails the test if a worker the test did not kill exited.
func (c *cluster) checkWorkers() error {
	for _, w := range c.workers {
		if w.exited() && !w.killed.Load() {
			b, _ := os.ReadFile(w.log)
			return fmt.Errorf("%s exited unexpectedly (%v):\n%s", w.name, w.cmd.ProcessState, b)
		}
	}
	return nil
}

// waitPollers waits until n distinct workers poll the activity task
// queue, so that a batch started next is spread over all of them.
func (c *cluster) waitPollers(n int) {
	c.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := c.checkWorkers(); err != nil {
			c.t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := c.tc.DescribeTaskQueue(ctx, c.tq, enums.TASK_QUEUE_TYPE_ACTIVITY)
		cancel()
		if err == nil && distinctPollers(resp.GetPollers()) >= n {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("waiting for %d workers to poll %s: %d polling (last error %v)", n, c.tq, distinctPollers(resp.GetPollers()), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func distinctPollers(ps []*taskqueue.PollerInfo) int {
	ids := map[string]bool{}
	for _, p := range ps {
		ids[p.GetIdentity()] = true
	}
	return len(ids)
}

// start starts a date's batch as `sluice ingest` does.
func (c *cluster) start(in workflows.DailyIngestInput) client.WorkflowRun {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.DailyWorkflowID(in.Date),
		TaskQueue:                c.tq,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, workflows.DailyIngestName, in)
	if err != nil {
		c.t.Fatalf("starting the daily ingest of %s: %v", in.Date, err)
	}
	return run
}

// wait waits for a batch's result, failing early if a worker the test did
// not kill exits.
func (c *cluster) wait(run client.WorkflowRun) workflows.DailyIngestResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	var res workflows.DailyIngestResult
	done := make(chan error, 1)
	go func() { done <- run.Get(ctx, &res) }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				c.t.Fatalf("daily ingest %s: %v (progress %+v)", run.GetID(), err, c.progress(run))
			}
			return res
		case <-tick.C:
			if err := c.checkWorkers(); err != nil {
				c.t.Fatal(err)
			}
		}
	}
}

// progress queries a running batch; the zero Progress until it planned.
func (c *cluster) progress(run client.WorkflowRun) workflows.Progress {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var p workflows.Progress
	v, err := c.tc.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.ProgressQuery)
	if err == nil {
		_ = v.Get(&p)
	}
	return p
}

// runBatch starts a batch and waits for its result.
func (c *cluster) runBatch(in workflows.DailyIngestInput) workflows.DailyIngestResult {
	c.t.Helper()
	began := time.Now()
	res := c.wait(c.start(in))
	c.t.Logf("batch %s: %d datasets, %d ok, %d no data, %d failed in %s", in.Date, len(res.Results), res.Succeeded, res.NoData, res.Failed,
		time.Since(began).Round(time.Millisecond))
	return res
}

// quietLogger drops the SDK's client logs.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

var _ log.Logger = quietLogger{}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openTemps lists the lake's temporary files a worker holds open: the
// objects it is writing.
func openTemps(w *workerProc, lakeRoot string) []string {
	fdDir := fmt.Sprintf("/proc/%d/fd", w.pid())
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, fd := range fds {
		p, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err == nil && strings.HasPrefix(p, lakeRoot+string(filepath.Separator)) && strings.HasPrefix(filepath.Base(p), tempPrefix) {
			out = append(out, p)
		}
	}
	return out
}

// metricsAddrRe finds the /metrics address in a worker's "worker started"
// log line.
var metricsAddrRe = regexp.MustCompile(`msg="worker started".* metrics=(\S+)`)

// callsRe matches one sample of sluice_provider_calls_total.
var callsRe = regexp.MustCompile(`^sluice_provider_calls_total\{([^}]*)\} (\S+)$`)

var scopeLabelRe = regexp.MustCompile(`scope="([^"]*)"`)

// scrapeCalls reads a worker's /metrics: the provider calls it sent, by
// scope instance, whatever their outcome.
func (c *cluster) scrapeCalls(w *workerProc) map[string]int64 {
	c.t.Helper()
	out := map[string]int64{}
	for scope, byOutcome := range c.scrapeOutcomes(w) {
		for _, n := range byOutcome {
			out[scope] += n
		}
	}
	return out
}
