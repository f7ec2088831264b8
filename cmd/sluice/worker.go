package main

import (
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/internal/deployment"
	"github.com/sluicehq/sluice/internal/redact"
	"github.com/sluicehq/sluice/lineage"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/worker"
)

func init() { register(newWorkerCmd) }

// runtimeFlags configure what a worker process does, in `sluice worker`
// and `sluice dev` alike.
type runtimeFlags struct {
	lake           lakeFlags
	baseURL        string
	simCredentials bool
	rateScale      float64
	tolerance      time.Duration
	maxQuotaWait   time.Duration
	maxActivities  int
	metricsAddr    string
	logLevel       string
	tokenStore     string
	keys           keyFlags
	// keeper is the token keepers' sealing client, once tokenKeeper chose
	// them; nil: the file store.
	keeper  client.Client
	watchDB watchDBFlag
	// buildID and promote place the worker in its task queue's Worker
	// Deployment (docs/deploy.md).
	buildID string
	promote string
	// lineageURL, lineageFile and lineageKeyFile say where the ingests'
	// OpenLineage events go (docs/lineage.md); lineageDest is what they
	// resolve to, with the API key, once validate has read it.
	lineageURL, lineageFile, lineageKeyFile, lineageNamespace string
	lineageDest                                               lineage.Options
	// notifications are the sinks the worker's notifier delivers to.
	notifications notificationsFlag
}

// envLineageAPIKey holds the lineage endpoint's API key itself; the flag
// --lineage-api-key-file (SLUICE_LINEAGE_API_KEY_FILE) names a file
// holding it.
const envLineageAPIKey = "SLUICE_LINEAGE_API_KEY"

// defaultMetricsAddr is where /metrics is served unless --metrics-addr
// says otherwise: loopback, as the metrics are not for everyone who can
// reach the host (a container publishes them with 0.0.0.0:9464 explicitly).
const defaultMetricsAddr = "127.0.0.1:9464"

func (r *runtimeFlags) bind(fs *pflag.FlagSet) {
	r.lake.bind(fs)
	stringFlag(fs, &r.baseURL, "base-url", "SLUICE_BASE_URL", "", "send every provider's calls to this base URL instead of the registry's (the simulator)")
	boolFlag(fs, &r.simCredentials, "sim-credentials", "SLUICE_SIM_CREDENTIALS", false, "use the simulator's test credentials instead of the environment's")
	floatFlag(fs, &r.rateScale, "rate-scale", "SLUICE_RATE_SCALE", 1, "multiply every declared rate; any value but 1 only against a simulator (--base-url) running at the same --rate-scale, which the worker checks at start")
	durationFlag(fs, &r.tolerance, "limiter-tolerance", "SLUICE_LIMITER_TOLERANCE", 50*time.Millisecond, "how late after its grant a call may still be sent; grants are spaced by it")
	durationFlag(fs, &r.maxQuotaWait, "max-quota-wait", "SLUICE_MAX_QUOTA_WAIT", 0, "how long a dataset whose daily quota is spent waits for the reset (a workflow timer) before it fails")
	intFlag(fs, &r.maxActivities, "max-activities", "SLUICE_MAX_ACTIVITIES", 500, "activities this worker runs at once")
	stringFlag(fs, &r.metricsAddr, "metrics-addr", "SLUICE_METRICS_ADDR", defaultMetricsAddr, "serve Prometheus /metrics on HOST:PORT (empty: off)")
	stringFlag(fs, &r.logLevel, "log-level", "SLUICE_LOG_LEVEL", "info", "log level: debug, info, warn, error")
	tokenStoreFlag(fs, &r.tokenStore)
	r.keys.bind(fs)
	r.watchDB.bind(fs)
	r.notifications.bind(fs)
	stringFlag(fs, &r.buildID, "build-id", deployment.BuildIDEnv, "", "the Worker Deployment build id this worker polls as (empty: the binary's git revision, or a hash of the binary; \"dev\" in sluice dev); see docs/deploy.md")
	stringFlag(fs, &r.promote, "promote", "SLUICE_PROMOTE", "if-none", "make this build the deployment's current version at start: if-none (only when there is no current version), never (sluice deploy promote does it), always")
	stringFlag(fs, &r.lineageURL, "lineage-url", "SLUICE_LINEAGE_URL", "", "POST every ingest's OpenLineage events to this HTTP endpoint, e.g. Marquez's http://marquez:5000/api/v1/lineage (empty: none)")
	stringFlag(fs, &r.lineageFile, "lineage-file", "SLUICE_LINEAGE_FILE", "", "append every ingest's OpenLineage events to this JSON-lines file, a relative path under --data-dir (empty: none)")
	stringFlag(fs, &r.lineageKeyFile, "lineage-api-key-file", envLineageAPIKey+"_FILE", "", "file holding the API key sent to --lineage-url as a bearer token (or the key in "+envLineageAPIKey+")")
	annotateSecret(fs, "lineage-api-key-file", envLineageAPIKey)
	stringFlag(fs, &r.lineageNamespace, "lineage-namespace", "SLUICE_LINEAGE_NAMESPACE", lineage.DefaultNamespace, "the OpenLineage job namespace of the ingests' events")
}

// validate refuses flag values no worker can run with: a rate scale that
// is not a positive finite number (a scale other than 1 is checked against
// the simulator when the worker starts), a negative tolerance or quota
// wait.
func (r *runtimeFlags) validate() error {
	if math.IsNaN(r.rateScale) || math.IsInf(r.rateScale, 0) {
		return fmt.Errorf("--rate-scale %v (env SLUICE_RATE_SCALE): must be a finite number", r.rateScale)
	}
	if r.rateScale <= 0 {
		return fmt.Errorf("--rate-scale %v (env SLUICE_RATE_SCALE): must be positive", r.rateScale)
	}
	if r.tolerance < 0 {
		return fmt.Errorf("--limiter-tolerance %v (env SLUICE_LIMITER_TOLERANCE): must not be negative", r.tolerance)
	}
	if r.maxQuotaWait < 0 {
		return fmt.Errorf("--max-quota-wait %v (env SLUICE_MAX_QUOTA_WAIT): must not be negative", r.maxQuotaWait)
	}
	if _, err := worker.ParsePromote(r.promote); err != nil {
		return fmt.Errorf("--promote (env SLUICE_PROMOTE): %w", err)
	}
	if strings.ContainsAny(r.buildID, ".:/ \t") {
		return fmt.Errorf("--build-id %q (env %s): must not hold '.', ':', '/' or spaces", r.buildID, deployment.BuildIDEnv)
	}
	return r.resolveLineage()
}

// resolveLineage checks the lineage flags and reads the API key into
// lineageDest: a URL that is not http(s) is refused by name (redacted of
// any credential it carries), a relative --lineage-file is taken under
// --data-dir, and a key without a URL to send it to is refused.
func (r *runtimeFlags) resolveLineage() error {
	key, _, err := material("lineage-api-key-file", r.lineageKeyFile, envLineageAPIKey)
	if err != nil {
		return err
	}
	d := lineage.Options{URL: r.lineageURL, File: r.lineageFile, APIKey: strings.TrimSpace(string(key))}
	if d.URL != "" {
		if u, err := url.Parse(d.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--lineage-url %q (env SLUICE_LINEAGE_URL): want an http or https URL", redact.URL(d.URL))
		}
	} else if d.APIKey != "" {
		return fmt.Errorf("a lineage API key is set (--lineage-api-key-file or %s) but --lineage-url (env SLUICE_LINEAGE_URL) is not", envLineageAPIKey)
	}
	if d.File != "" && !filepath.IsAbs(d.File) {
		d.File = filepath.Join(r.lake.dataDir.root(), d.File)
	}
	if strings.TrimSpace(r.lineageNamespace) == "" {
		return fmt.Errorf("--lineage-namespace %q (env SLUICE_LINEAGE_NAMESPACE): must not be empty", r.lineageNamespace)
	}
	r.lineageDest = d
	return nil
}

// lineageLake names the lake in lineage events: the bucket, or the local
// lake's absolute path.
func (r *runtimeFlags) lineageLake() lineage.Lake {
	if r.lake.cfg.S3Bucket != "" {
		return lineage.S3Lake(r.lake.cfg.S3Bucket)
	}
	dir := r.lake.dataDir.lake()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return lineage.LocalLake(dir)
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
		Client: tc, TaskQueue: taskQueue, Config: activities.Config{Registry: reg, Sink: lake, RateScale: r.rateScale, Logger: log},
		Tolerance: r.tolerance, MaxQuotaWait: r.maxQuotaWait,
		MaxConcurrentActivities: r.maxActivities, MetricsAddr: r.metricsAddr,
		BuildID: r.buildID, LineageDest: r.lineageDest,
	}
	opts.LineageLake, opts.LineageNamespace = r.lineageLake(), r.lineageNamespace
	opts.Promote, _ = worker.ParsePromote(r.promote) // checked by validate
	if r.baseURL != "" {
		opts.BaseURLs = map[string]string{"*": r.baseURL}
	}
	if r.simCredentials {
		opts.Credentials = connector.MapCredentials(simulator.TestCredentials(reg))
	}
	if r.keeper != nil {
		// KIS tokens live in the token keepers: every worker on every
		// machine shares one token per app key.
		opts.TokenKeeper = r.keeper
	} else if store, err := tokenstore.NewFile(r.lake.dataDir.tokens()); err == nil {
		// Under the data directory: every worker sharing it (one machine,
		// or a shared volume) shares one token per app key.
		opts.TokenStore = store
	}
	return opts
}

// lineageInUse names where lineage events go, for the start-up log: the
// endpoint without its query, and the file.
func (r *runtimeFlags) lineageInUse() string {
	var to []string
	if r.lineageDest.URL != "" {
		in := lineage.Endpoint(r.lineageDest.URL, "")
		to = append(to, in.Namespace+in.Name)
	}
	if r.lineageDest.File != "" {
		to = append(to, r.lineageDest.File)
	}
	if len(to) == 0 {
		return "off"
	}
	return strings.Join(to, " and ")
}

// tokenStoreInUse names where KIS tokens are kept, for the start-up log.
func (r *runtimeFlags) tokenStoreInUse() string {
	if r.keeper != nil {
		return tokensKeeper
	}
	return tokensFile
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
			if err := rf.validate(); err != nil {
				return err
			}
			log, err := rf.logger()
			if err != nil {
				return err
			}
			reg, err := loadRegistry()
			if err != nil {
				return err
			}
			notifications, err := rf.notifications.load()
			if err != nil {
				return err
			}
			lake, err := rf.lake.open(cmd.Context())
			if err != nil {
				return err
			}
			defer lake.Close()
			ws, err := rf.watchDB.open(cmd.Context(), rf.lake.dataDir)
			if err != nil {
				return err
			}
			defer ws.Close()
			ring, err := rf.keyring(log, false)
			if err != nil {
				return err
			}
			tc, copts, err := tf.dial(cmd.Context(), log)
			if err != nil {
				return err
			}
			defer tc.Close()
			if kc, err := rf.tokenKeeper(cmd.Context(), tc, copts, ring); err != nil {
				return err
			} else if kc != nil {
				defer kc.Close()
			}
			wopts := rf.workerOptions(reg, tc, tf.taskQueue, lake, log)
			wopts.Watch = ws
			wopts.Notify = notifications
			w, err := worker.Start(wopts)
			if err != nil {
				return err
			}
			defer w.Stop()
			log.Info("worker started", "temporal", tf.addr, "namespace", tf.namespace, "task_queue", tf.taskQueue, "metrics", w.MetricsAddr(),
				"deployment", w.Version().DeploymentName, "build_id", w.Version().BuildID,
				"datasets", len(reg.Datasets), "kis_tokens", rf.tokenStoreInUse(), "lineage", rf.lineageInUse())
			<-cmd.Context().Done()
			log.Info("stopping worker")
			return nil
		},
	}
	tf.bind(cmd.Flags())
	rf.bind(cmd.Flags())
	return cmd
}
