// Package worker assembles a Sluice worker process: a Temporal worker on
// Sluice's task queue running the workflows (daily ingest, scope limiters,
// ops events, the datasets' watches, the notifier) and the activities, with their
// connectors, the lake sink, the watch store, the limiter client and the
// Prometheus metrics server; and, with a sealing client, a second worker
// running the token keepers.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/deployment"
	"github.com/sluicehq/sluice/lineage"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/tokenkeeper"
	"github.com/sluicehq/sluice/workflows"

	// Link every provider connector.
	_ "github.com/sluicehq/sluice/connector/all"
)

// DefaultTaskQueue is the task queue Sluice's workflows and activities run
// on (workflows.TaskQueue).
const DefaultTaskQueue = workflows.TaskQueue

// Options configure a worker process.
type Options struct {
	Client    client.Client // connected to the namespace; required
	TaskQueue string        // default DefaultTaskQueue
	// Config is the activities' configuration: Registry and Sink
	// (required), BaseURLs ("*" for all: the simulator), Credentials,
	// TokenStore, Watch, RateScale and Logger, which the worker's limiter
	// gate and events share. Start sets its Gate and Metrics.
	//
	// TokenStore nil means the token keepers when TokenKeeper is set, else
	// tokens kept in the worker's process. RateScale other than 1 runs
	// only against a simulator at the same scale, which Start checks
	// (ratelimit.CheckScale). Watch, when set, receives probes, states,
	// Changes and a copy of every operational event; the caller opens and
	// closes it. Notify, when it has sinks, makes the worker tell people
	// of the changes its probes confirm (workflows.Notifier).
	activities.Config
	// TokenKeeper, when set, is a client whose payloads are sealed
	// (tokenkeeper.SealingClient): the worker also runs the token-keeper
	// workflows, on tokenkeeper.TaskQueue(TaskQueue), with it, and keeps
	// KIS tokens in them unless TokenStore is set — one token per app key
	// across every machine.
	TokenKeeper client.Client
	// Tolerance is how late after its grant a call may still be sent.
	Tolerance time.Duration
	// MaxQuotaWait is how long an ingest may wait for a daily quota reset.
	MaxQuotaWait time.Duration
	// MaxConcurrentActivities bounds the activities this process runs at
	// once (0: 500). Waiting for a permit holds a slot but little memory.
	MaxConcurrentActivities int
	// MetricsAddr serves /metrics when not empty, e.g. 127.0.0.1:9464.
	MetricsAddr string
	// BuildID is the Worker Deployment version this process polls as, in
	// the deployment deployment.Name(TaskQueue); "" means
	// deployment.BuildID(), the binary's own.
	BuildID string
	// Promote says when Start makes this build the deployment's current
	// version: PromoteIfNone (the zero value) when the deployment has no
	// current version yet — the first worker of a new deployment, the
	// first versioned deploy — PromoteNever to leave it to the operator
	// (`sluice deploy promote`), PromoteAlways to take over as it starts
	// (automation that starts it next to the old build, whose workers the
	// runs pinned to it still need until they have moved).
	Promote Promote
	// LineageDest says where the ingests' OpenLineage events go (an HTTP
	// endpoint, a JSON-lines file, or both; neither: no events): Start
	// makes the emitter, logging with Logger and counting outcomes in the
	// worker's metrics, and Stop drains it for up to LineageDrain. Unused
	// when Config.Lineage is set.
	LineageDest lineage.Options
	// StaleSweep is how often a worker writing a local lake
	// (*sink.Local) removes the temporary files of writers killed
	// mid-write (sink.Local.SweepStale); 0 means sink.StaleTempAge.
	StaleSweep time.Duration
}

// LineageDrain bounds how long Stop waits for queued lineage events.
const LineageDrain = 10 * time.Second

// Promote says when a starting worker makes its build the current version
// of its deployment.
type Promote string

// The Promote values.
const (
	PromoteIfNone Promote = ""
	PromoteNever  Promote = "never"
	PromoteAlways Promote = "always"
)

// ParsePromote parses the --promote flag: if-none (or ""), never, always.
func ParsePromote(s string) (Promote, error) {
	switch s {
	case "", "if-none":
		return PromoteIfNone, nil
	case string(PromoteNever), string(PromoteAlways):
		return Promote(s), nil
	}
	return "", fmt.Errorf("promote %q: want if-none, never or always", s)
}

// Worker is a running Sluice worker.
type Worker struct {
	w          sdkworker.Worker
	keeper     sdkworker.Worker // nil without Options.TokenKeeper
	metrics    *metrics.Metrics
	limiter    *ratelimit.Client
	gate       *ratelimit.Gate
	acts       *activities.Activities
	metricsSrv *http.Server
	metricsLn  net.Listener
	version    sdkworker.WorkerDeploymentVersion
	lineage    *lineage.Emitter // made by Start, closed by Stop; nil: none
	running    *running         // the activity executions under way
	stopSweep  func()           // ends the local lake's sweep; nil: none
	log        *slog.Logger
}

// Register registers Sluice's workflows and activities on w.
//
// The long-lived singletons — scope limiters, watches, the notifier,
// backfill parents — are pinned (workflow.VersioningBehaviorPinned) on a
// versioned worker:
// one run is served by the build that started it only, and moves to the
// deployment's current version when it continues as new
// (deployment.ContinueAsNew). The others — daily ingests, refetches, a
// backfill's dataset workflows, the events workflow — take the worker's
// default, DefaultVersioningBehavior (auto-upgrade): they are bounded
// runs whose every workflow-visible change is versioned with GetVersion,
// so that a deploy that stops the old workers mid-run does not strand them
// (see docs/deploy.md). On an unversioned worker (a replayer, a test
// environment) the behaviours are ignored.
func Register(w sdkworker.Registry, acts *activities.Activities) {
	pinned := workflow.VersioningBehaviorPinned
	w.RegisterWorkflowWithOptions(workflows.DailyIngest, workflow.RegisterOptions{Name: workflows.DailyIngestName})
	w.RegisterWorkflowWithOptions(workflows.Refetch, workflow.RegisterOptions{Name: workflows.RefetchName})
	w.RegisterWorkflowWithOptions(workflows.Backfill, workflow.RegisterOptions{Name: workflows.BackfillName, VersioningBehavior: pinned})
	w.RegisterWorkflowWithOptions(workflows.BackfillDataset, workflow.RegisterOptions{Name: workflows.BackfillDatasetName})
	w.RegisterWorkflowWithOptions(ratelimit.ScopeLimiter, workflow.RegisterOptions{Name: ratelimit.WorkflowName, VersioningBehavior: pinned})
	w.RegisterWorkflowWithOptions(events.Workflow, workflow.RegisterOptions{Name: events.WorkflowName})
	w.RegisterWorkflowWithOptions(workflows.Watch, workflow.RegisterOptions{Name: workflows.WatchName, VersioningBehavior: pinned})
	w.RegisterWorkflowWithOptions(workflows.Notifier, workflow.RegisterOptions{Name: workflows.NotifierName, VersioningBehavior: pinned})
	w.RegisterActivity(acts)
}

// RegisterTokenKeeper registers the token-keeper workflow on w, a worker
// on tokenkeeper.TaskQueue whose client seals payloads. Token keepers are
// pinned singletons, as Register's limiters are.
func RegisterTokenKeeper(w sdkworker.Registry) {
	w.RegisterWorkflowWithOptions(workflows.TokenKeeper, workflow.RegisterOptions{Name: tokenkeeper.WorkflowName,
		VersioningBehavior: workflow.VersioningBehaviorPinned})
}

// DefaultVersioningBehavior is the versioning behaviour of the workflows
// Register does not pin: auto-upgrade, to the current version at their
// next workflow task.
const DefaultVersioningBehavior = workflow.VersioningBehaviorAutoUpgrade

// Start builds and starts a worker; Stop it when done.
func Start(opts Options) (*Worker, error) {
	if opts.Client == nil || opts.Registry == nil || opts.Sink == nil {
		return nil, errors.New("starting worker: client, registry and sink are required")
	}
	if opts.TaskQueue == "" {
		opts.TaskQueue = DefaultTaskQueue
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxConcurrentActivities <= 0 {
		opts.MaxConcurrentActivities = 500
	}
	if opts.RateScale == 0 {
		opts.RateScale = 1
	}
	checkCtx, cancelCheck := context.WithTimeout(context.Background(), 2*ratelimit.ScaleCheckTimeout)
	err := ratelimit.CheckScale(checkCtx, opts.RateScale, opts.Registry, opts.BaseURLs, nil)
	cancelCheck()
	if err != nil {
		return nil, fmt.Errorf("starting worker: %w", err)
	}
	if opts.TokenKeeper != nil && opts.TokenStore == nil {
		store, err := tokenkeeper.NewStore(opts.TokenKeeper, tokenkeeper.StoreOptions{TaskQueue: tokenkeeper.TaskQueue(opts.TaskQueue), Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("starting worker: %w", err)
		}
		opts.TokenStore = store
	}
	m := metrics.New()
	lim := ratelimit.NewClient(opts.Client, ratelimit.ClientOptions{TaskQueue: opts.TaskQueue, Logger: opts.Logger, Metrics: m})
	recorder := events.NewRecorder(opts.Client, opts.TaskQueue)
	var acts *activities.Activities // set below; events notify through it
	notifying := opts.Notify != nil && len(opts.Notify.Sinks) > 0
	if opts.Watch != nil || notifying {
		recorder.Also(func(ctx context.Context, e events.Event) error {
			if notifying && acts != nil {
				activities.NotifyEvent(ctx, acts, e)
			}
			if opts.Watch == nil {
				return nil
			}
			return opts.Watch.AddEvents(ctx, e)
		})
	}
	emitter := events.NewEmitter(recorder, m, opts.Logger)
	gate, err := ratelimit.NewGate(ratelimit.GateOptions{
		Registry: opts.Registry, Client: lim, RateScale: opts.RateScale, Tolerance: opts.Tolerance, MaxQuotaWait: opts.MaxQuotaWait,
		Events: emitter, Metrics: m, Logger: opts.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("starting worker: %w", err)
	}
	acfg := opts.Config
	acfg.Gate, acfg.Metrics, acfg.Events = gate, m, emitter
	var ownLineage *lineage.Emitter
	if acfg.Lineage == nil {
		dest := opts.LineageDest
		if dest.Logger == nil {
			dest.Logger = opts.Logger
		}
		dest.Count = m.LineageEvent
		if ownLineage, err = lineage.New(dest); err != nil {
			return nil, fmt.Errorf("starting worker: %w", err)
		}
		acfg.Lineage = ownLineage
	}
	started := false
	defer func() {
		if !started {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // nothing was emitted: close at once
			_ = ownLineage.Close(ctx)
		}
	}()
	if notifying && acfg.Notifier == nil {
		acfg.Notifier = workflows.NewNotifierClient(opts.Client, opts.TaskQueue, opts.Notify.GroupWindow, opts.Notify.GroupMax)
	}
	acts, err = activities.New(acfg)
	if err != nil {
		return nil, fmt.Errorf("starting worker: %w", err)
	}
	if opts.BuildID == "" {
		if opts.BuildID, err = deployment.BuildID(); err != nil {
			return nil, fmt.Errorf("starting worker: %w", err)
		}
	}
	version := sdkworker.WorkerDeploymentVersion{DeploymentName: deployment.Name(opts.TaskQueue), BuildID: opts.BuildID}
	deploymentOptions := sdkworker.DeploymentOptions{UseVersioning: true, Version: version, DefaultVersioningBehavior: DefaultVersioningBehavior}
	run := newRunning()
	w := sdkworker.New(opts.Client, opts.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: opts.MaxConcurrentActivities,
		DeploymentOptions:                  deploymentOptions,
		Interceptors:                       []interceptor.WorkerInterceptor{run},
	})
	Register(w, acts)
	out := &Worker{w: w, metrics: m, limiter: lim, gate: gate, acts: acts, version: version, lineage: ownLineage, running: run, log: opts.Logger}
	if opts.MetricsAddr != "" {
		ln, err := net.Listen("tcp", opts.MetricsAddr)
		if err != nil {
			return nil, fmt.Errorf("starting worker: listening for metrics on %s: %w", opts.MetricsAddr, err)
		}
		out.metricsSrv = m.Server()
		out.metricsLn = ln
		go func() { _ = out.metricsSrv.Serve(ln) }()
	}
	if opts.TokenKeeper != nil {
		out.keeper = sdkworker.New(opts.TokenKeeper, tokenkeeper.TaskQueue(opts.TaskQueue), sdkworker.Options{DeploymentOptions: deploymentOptions})
		RegisterTokenKeeper(out.keeper)
		if err := out.keeper.Start(); err != nil {
			out.stopMetrics()
			return nil, fmt.Errorf("starting the token keeper worker on task queue %s: %w", tokenkeeper.TaskQueue(opts.TaskQueue), err)
		}
	}
	if err := w.Start(); err != nil {
		if out.keeper != nil {
			out.keeper.Stop()
		}
		out.stopMetrics()
		return nil, fmt.Errorf("starting worker on task queue %s: %w", opts.TaskQueue, err)
	}
	if opts.Promote != PromoteNever {
		pctx, pcancel := context.WithTimeout(context.Background(), promoteTimeout)
		current, promoted, err := promote(pctx, opts.Client, version, opts.Promote == PromoteAlways)
		pcancel()
		if err != nil {
			out.Stop()
			return nil, fmt.Errorf("starting worker: %w", err)
		}
		switch {
		case promoted:
			opts.Logger.Info("made this build the current version", "deployment", version.DeploymentName, "build_id", version.BuildID)
		case current != version.BuildID:
			opts.Logger.Warn("this build is not the deployment's current version: it takes no new work until promoted (sluice deploy promote, docs/deploy.md)",
				"deployment", version.DeploymentName, "build_id", version.BuildID, "current", current)
		}
	}
	if lake, ok := opts.Sink.(staleSweeper); ok {
		out.sweep(lake, opts.StaleSweep)
	}
	// Start the scope limiters now rather than on the first call; a
	// failure here is not fatal (the first acquire starts them anyway).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := gate.Warm(ctx); err != nil {
		opts.Logger.Warn("warming scope limiters", "err", err)
	}
	started = true
	return out, nil
}

// MetricsAddr is the address /metrics is served on, or "".
func (w *Worker) MetricsAddr() string {
	if w.metricsLn == nil {
		return ""
	}
	return w.metricsLn.Addr().String()
}

// Version is the Worker Deployment version the worker polls as.
func (w *Worker) Version() sdkworker.WorkerDeploymentVersion { return w.version }

// Metrics returns the worker's metrics.
func (w *Worker) Metrics() *metrics.Metrics { return w.metrics }

// Limiter returns the worker's limiter client.
func (w *Worker) Limiter() *ratelimit.Client { return w.limiter }

// Gate returns the worker's rate-limit gate.
func (w *Worker) Gate() *ratelimit.Gate { return w.gate }

// Activities returns the worker's activities.
func (w *Worker) Activities() *activities.Activities { return w.acts }

// Stop stops polling, cancels the running activities and waits up to
// ActivityDrain for them to return — an interrupted write aborts: no
// temporary file stays in a local lake, no multipart upload on S3 — then
// stops the local lake's sweep, drains the lineage events and stops the
// metrics server. The cancelled activities are retried by other workers.
func (w *Worker) Stop() {
	w.w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), ActivityDrain)
	if n := w.running.wait(ctx); n > 0 {
		w.log.Warn("activities still running after the stop's drain: their writes may be left unfinished", "activities", n, "drain", ActivityDrain)
	}
	cancel()
	if w.keeper != nil {
		w.keeper.Stop()
	}
	if w.stopSweep != nil {
		w.stopSweep()
	}
	ctx, cancel = context.WithTimeout(context.Background(), LineageDrain)
	defer cancel()
	_ = w.lineage.Close(ctx) // what is left is dropped and counted
	w.stopMetrics()
}

// staleSweeper is a lake whose temporary files a worker sweeps:
// sink.Local.
type staleSweeper interface {
	SweepStale(ctx context.Context, ticks <-chan time.Time, report func(removed []string, err error))
}

// sweep runs the local lake's sweep of stale temporary files every
// interval (0: sink.StaleTempAge) until Stop.
func (w *Worker) sweep(l staleSweeper, every time.Duration) {
	if every <= 0 {
		every = sink.StaleTempAge
	}
	ctx, cancel := context.WithCancel(context.Background())
	ticker := time.NewTicker(every)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.SweepStale(ctx, ticker.C, func(removed []string, err error) {
			if err != nil {
				w.log.Warn("sweeping the lake's stale temporary files", "err", err)
			}
			if len(removed) > 0 {
				w.log.Info("removed the temporary files of writers killed mid-write", "files", removed)
			}
		})
	}()
	w.stopSweep = func() {
		cancel()
		ticker.Stop()
		<-done
	}
}

func (w *Worker) stopMetrics() {
	if w.metricsSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.metricsSrv.Shutdown(ctx)
	}
}
