// Package worker assembles a Sluice worker process: a Temporal worker on
// Sluice's task queue running the workflows (daily ingest, scope limiters,
// ops events, the datasets' watches) and the activities, with their
// connectors, the lake sink, the watch store, the limiter client and the
// Prometheus metrics server.
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
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
	"github.com/sluicehq/sluice/workflows"

	// Link every provider connector.
	_ "github.com/sluicehq/sluice/connector/all"
)

// DefaultTaskQueue is the task queue Sluice's workflows and activities run
// on.
const DefaultTaskQueue = "sluice"

// Options configure a worker process.
type Options struct {
	Client    client.Client // connected to the namespace; required
	TaskQueue string        // default DefaultTaskQueue
	Registry  *registry.Registry
	Sink      sink.Sink
	// BaseURLs overrides provider base URLs ("*" for all): the simulator.
	BaseURLs    map[string]string
	Credentials connector.Credentials
	TokenStore  connector.TokenStore
	RateScale   float64
	Tolerance   time.Duration
	// MaxQuotaWait is how long an ingest may wait for a daily quota reset.
	MaxQuotaWait time.Duration
	// MaxConcurrentActivities bounds the activities this process runs at
	// once (0: 500). Waiting for a permit holds a slot but little memory.
	MaxConcurrentActivities int
	// MetricsAddr serves /metrics when not empty, e.g. 127.0.0.1:9464.
	MetricsAddr string
	Logger      *slog.Logger
	// Watch is the watch store: probes, states, Changes and a copy of
	// every operational event go there (nil: probes are not recorded and
	// revisions not compared). The caller opens and closes it.
	Watch store.Store
}

// Worker is a running Sluice worker.
type Worker struct {
	w          sdkworker.Worker
	metrics    *metrics.Metrics
	limiter    *ratelimit.Client
	acts       *activities.Activities
	metricsSrv *http.Server
	metricsLn  net.Listener
}

// Register registers Sluice's workflows and activities on w.
func Register(w sdkworker.Registry, acts *activities.Activities) {
	w.RegisterWorkflowWithOptions(workflows.DailyIngest, workflow.RegisterOptions{Name: workflows.DailyIngestName})
	w.RegisterWorkflowWithOptions(workflows.Refetch, workflow.RegisterOptions{Name: workflows.RefetchName})
	w.RegisterWorkflowWithOptions(workflows.ScopeLimiter, workflow.RegisterOptions{Name: ratelimit.WorkflowName})
	w.RegisterWorkflowWithOptions(workflows.OpsEvents, workflow.RegisterOptions{Name: events.WorkflowName})
	w.RegisterWorkflowWithOptions(workflows.Watch, workflow.RegisterOptions{Name: workflows.WatchName})
	w.RegisterActivity(acts)
}

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
	m := metrics.New()
	lim := ratelimit.NewClient(opts.Client, ratelimit.ClientOptions{TaskQueue: opts.TaskQueue, Logger: opts.Logger,
		RecoveryStep: scaled(ratelimit.DefaultRecoveryStep, opts.RateScale)})
	recorder := events.NewRecorder(opts.Client, opts.TaskQueue)
	if opts.Watch != nil {
		recorder.Also(func(ctx context.Context, e events.Event) error { return opts.Watch.AddEvents(ctx, watch.Event(e)) })
	}
	acts, err := activities.New(activities.Config{
		Registry: opts.Registry, Sink: opts.Sink, Limiter: lim,
		Events: recorder, Metrics: m, Logger: opts.Logger,
		BaseURLs: opts.BaseURLs, Credentials: opts.Credentials, TokenStore: opts.TokenStore,
		RateScale: opts.RateScale, Tolerance: opts.Tolerance, MaxQuotaWait: opts.MaxQuotaWait,
		Watch: opts.Watch,
	})
	if err != nil {
		return nil, fmt.Errorf("starting worker: %w", err)
	}
	w := sdkworker.New(opts.Client, opts.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: opts.MaxConcurrentActivities,
	})
	Register(w, acts)
	out := &Worker{w: w, metrics: m, limiter: lim, acts: acts}
	if opts.MetricsAddr != "" {
		ln, err := net.Listen("tcp", opts.MetricsAddr)
		if err != nil {
			return nil, fmt.Errorf("starting worker: listening for metrics on %s: %w", opts.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", m.Handler())
		out.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		out.metricsLn = ln
		go func() { _ = out.metricsSrv.Serve(ln) }()
	}
	if err := w.Start(); err != nil {
		out.stopMetrics()
		return nil, fmt.Errorf("starting worker on task queue %s: %w", opts.TaskQueue, err)
	}
	// Start the scope limiters now rather than on the first call; a
	// failure here is not fatal (the first acquire starts them anyway).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := acts.WarmLimiters(ctx); err != nil {
		opts.Logger.Warn("warming scope limiters", "err", err)
	}
	return out, nil
}

func scaled(d time.Duration, scale float64) time.Duration {
	if scale <= 0 {
		return d
	}
	return time.Duration(float64(d) / scale)
}

// MetricsAddr is the address /metrics is served on, or "".
func (w *Worker) MetricsAddr() string {
	if w.metricsLn == nil {
		return ""
	}
	return w.metricsLn.Addr().String()
}

// Metrics returns the worker's metrics.
func (w *Worker) Metrics() *metrics.Metrics { return w.metrics }

// Limiter returns the worker's limiter client.
func (w *Worker) Limiter() *ratelimit.Client { return w.limiter }

// Activities returns the worker's activities.
func (w *Worker) Activities() *activities.Activities { return w.acts }

// Stop stops polling, waits for running activities to finish or be
// cancelled, and stops the metrics server.
func (w *Worker) Stop() {
	w.w.Stop()
	w.stopMetrics()
}

func (w *Worker) stopMetrics() {
	if w.metricsSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.metricsSrv.Shutdown(ctx)
	}
}
