package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/worker"
)

func init() { register(newWorkerCmd) }

// runtimeFlags configure what a worker process does, in `sluice worker`
// and `sluice dev` alike.
type runtimeFlags struct {
	sink           sink.Config
	baseURL        string
	simCredentials bool
	rateScale      float64
	tolerance      time.Duration
	maxQuotaWait   time.Duration
	maxActivities  int
	metricsAddr    string
	logLevel       string
	watchDB        watchDBFlag
}

func (r *runtimeFlags) bind(fs *pflag.FlagSet, metricsDefault string) {
	r.sink.BindFlags(fs)
	stringFlag(fs, &r.baseURL, "base-url", "SLUICE_BASE_URL", "", "send every provider's calls to this base URL instead of the registry's (the simulator)")
	boolFlag(fs, &r.simCredentials, "sim-credentials", "SLUICE_SIM_CREDENTIALS", false, "use the simulator's test credentials instead of the environment's")
	floatFlag(fs, &r.rateScale, "rate-scale", "SLUICE_RATE_SCALE", 1, "multiply every declared rate (only against a simulator started with the same --rate-scale)")
	durationFlag(fs, &r.tolerance, "limiter-tolerance", "SLUICE_LIMITER_TOLERANCE", 50*time.Millisecond, "how late after its grant a call may still be sent; grants are spaced by it")
	durationFlag(fs, &r.maxQuotaWait, "max-quota-wait", "SLUICE_MAX_QUOTA_WAIT", 0, "how long an ingest may wait for an exhausted daily quota to reset before its dataset fails")
	intFlag(fs, &r.maxActivities, "max-activities", "SLUICE_MAX_ACTIVITIES", 500, "activities this worker runs at once")
	stringFlag(fs, &r.metricsAddr, "metrics-addr", "SLUICE_METRICS_ADDR", metricsDefault, "serve Prometheus /metrics on HOST:PORT (empty: off)")
	stringFlag(fs, &r.logLevel, "log-level", "SLUICE_LOG_LEVEL", "info", "log level: debug, info, warn, error")
	r.watchDB.bind(fs)
}

func (r *runtimeFlags) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(r.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", r.logLevel)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// workerOptions builds worker.Options from the flags.
func (r *runtimeFlags) workerOptions(reg *registry.Registry, tc client.Client, taskQueue string, lake sink.Sink, log *slog.Logger) worker.Options {
	opts := worker.Options{
		Client: tc, TaskQueue: taskQueue, Registry: reg, Sink: lake,
		RateScale: r.rateScale, Tolerance: r.tolerance, MaxQuotaWait: r.maxQuotaWait,
		MaxConcurrentActivities: r.maxActivities, MetricsAddr: r.metricsAddr, Logger: log,
	}
	if r.baseURL != "" {
		opts.BaseURLs = map[string]string{"*": r.baseURL}
	}
	if r.simCredentials {
		opts.Credentials = connector.MapCredentials(simulator.TestCredentials(reg))
	}
	// KIS tokens live under the data directory: every worker sharing it
	// (one machine, or a shared volume) shares one token per app key.
	if store, err := tokenstore.NewFile(filepath.Join(r.sink.DataDir, "tokens")); err == nil {
		opts.TokenStore = store
	}
	return opts
}

func newWorkerCmd() *cobra.Command {
	var tf temporalFlags
	var rf runtimeFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a Sluice worker against a Temporal server",
		Long: `Runs a worker on Sluice's task queue: the daily ingest workflow, the per-scope
limiter workflows, the datasets' watch workflows and the ingest and probe
activities, which record probes, states, Changes and operational events in the
watch store (--watch-db, or SQLite under --data-dir). Start as many as you
like, on as many machines: every provider call waits for a permit from its
scope's one limiter, so the declared limits hold across all of them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := rf.logger()
			if err != nil {
				return err
			}
			reg, err := loadRegistry()
			if err != nil {
				return err
			}
			lake, err := rf.sink.Open(cmd.Context())
			if err != nil {
				return err
			}
			defer lake.Close()
			ws, err := rf.watchDB.open(cmd.Context(), rf.sink.DataDir)
			if err != nil {
				return err
			}
			defer ws.Close()
			tc, err := client.Dial(client.Options{HostPort: tf.addr, Namespace: tf.namespace, Logger: temporalLogger(log)})
			if err != nil {
				return fmt.Errorf("connecting to Temporal at %s: %w", tf.addr, err)
			}
			defer tc.Close()
			wopts := rf.workerOptions(reg, tc, tf.taskQueue, lake, log)
			wopts.Watch = ws
			w, err := worker.Start(wopts)
			if err != nil {
				return err
			}
			defer w.Stop()
			log.Info("worker started", "temporal", tf.addr, "namespace", tf.namespace, "task_queue", tf.taskQueue, "metrics", w.MetricsAddr(),
				"datasets", len(reg.Datasets))
			<-cmd.Context().Done()
			log.Info("stopping worker")
			return nil
		},
	}
	tf.bind(cmd.Flags())
	rf.bind(cmd.Flags(), "0.0.0.0:9464")
	return cmd
}
