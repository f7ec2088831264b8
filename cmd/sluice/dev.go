package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/codec"
	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/schedules"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch/store"
	"github.com/sluicehq/sluice/watchsync"
	"github.com/sluicehq/sluice/worker"
	"github.com/sluicehq/sluice/workflows"
)

func init() { register(newDevCmd) }

// devBuildID is the build id `sluice dev` polls as unless --build-id says
// otherwise: the same across rebuilds, as the dev worker is never deployed
// next to an older one.
const devBuildID = "dev"

// devFlags are sluice dev's flags.
type devFlags struct {
	rf                                                        runtimeFlags
	sf                                                        statusFlags
	frontendAddr, uiAddr, simAddr, codecAddr, date, namespace string
	allowInsecureRemote                                       bool
	real, once, noIngest, noSchedules                         bool
	catchup                                                   time.Duration
	providers, datasets, faults                               []string
}

func newDevCmd() *cobra.Command {
	var f devFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run everything in one process: Temporal + Web UI, simulator, worker, local lake",
		Long: `Starts an embedded Temporal server (SQLite under --data-dir, so history
survives restarts) with its Web UI, the provider simulator (unless --real),
a worker and the local lake, prints their addresses, syncs the registry's
schedules into the embedded server (sluice schedules sync: the Web UI's
Schedules page lists them and they fire while it stays up; --no-schedules
skips it), starts the watch (one Watch workflow per probed dataset,
recording into the watch store under --data-dir; see sluice watch), then
runs one daily ingest of the whole registry for yesterday's logical date
(--date to choose) and prints a summary table — per provider, the time the
batch took against the least its declared limits allow — and the watch in
one line. Logs go to <data-dir>/logs/dev.log; the console shows only
warnings and errors, or everything at --log-level debug. It then stays up
for the Web UI until Ctrl-C; --once exits after the batch, with status 2 if
any dataset failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.bind(cmd.Flags())
	return cmd
}

func (f *devFlags) bind(fs *pflag.FlagSet) {
	f.rf.bind(fs)
	stringFlag(fs, &f.frontendAddr, "frontend-addr", "SLUICE_FRONTEND_ADDR", embedded.DefaultFrontendAddr, "embedded Temporal frontend HOST:PORT")
	stringFlag(fs, &f.uiAddr, "ui-addr", "SLUICE_UI_ADDR", embedded.DefaultUIAddr, "Web UI HOST:PORT (off: no UI)")
	allowInsecureRemoteFlag(fs, &f.allowInsecureRemote)
	stringFlag(fs, &f.namespace, "namespace", "SLUICE_NAMESPACE", embedded.DefaultNamespace, "Temporal namespace")
	stringFlag(fs, &f.codecAddr, "codec-addr", "SLUICE_CODEC_ADDR", "127.0.0.1:0", "codec endpoint the Web UI decodes sealed payloads through, on loopback (port 0: a free port; off: none)")
	f.sf.bind(fs, "status-addr", "serve the status pages on HOST:PORT (off: none)")
	stringFlag(fs, &f.simAddr, "sim-addr", "SLUICE_SIM_ADDR", "127.0.0.1:0", "simulator HOST:PORT (port 0: a free port)")
	fs.StringVar(&f.date, "date", "", "logical date of the batch, YYYY-MM-DD (default: yesterday)")
	fs.BoolVar(&f.real, "real", false, "call the real provider endpoints instead of the simulator (credentials from the environment)")
	fs.BoolVar(&f.once, "once", false, "exit after the batch instead of staying up for the Web UI")
	fs.BoolVar(&f.noIngest, "no-ingest", false, "start everything but run no batch")
	fs.BoolVar(&f.noSchedules, "no-schedules", false, "do not sync the registry's schedules into the embedded server")
	durationFlag(fs, &f.catchup, "catchup-window", "SLUICE_SCHEDULE_CATCHUP_WINDOW", schedules.DefaultCatchupWindow,
		"the schedules' catch-up window: runs missed while the server was down are taken when it starts again if no older than this")
	fs.StringSliceVar(&f.providers, "provider", nil, "only this provider's datasets in the batch (repeatable)")
	fs.StringSliceVar(&f.datasets, "dataset", nil, "only this dataset in the batch (repeatable)")
	fs.StringArrayVar(&f.faults, "fault", nil, "inject a simulator fault, in sluice sim's --fault syntax, e.g. provider=datago,dataset=ID,shape=gateway-json,code=22,status=429 (repeatable; not with --real)")
}

// devStack is what sluice dev runs; close stops it in the reverse order
// it was started.
type devStack struct {
	reg     *registry.Registry
	ring    *codec.Keyring
	cs      *codecServer
	srv     *embedded.Server
	sim     *simulator.Simulator
	lake    sink.Sink
	tc      client.Client
	w       *worker.Worker
	ws      store.Store
	steps   []watchsync.Step
	closers []func()
}

func (s *devStack) onClose(fn func()) { s.closers = append(s.closers, fn) }

func (s *devStack) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// run is sluice dev: start the stack, print its addresses, sync the
// schedules, run the batch and stay up unless --once.
func (f *devFlags) run(ctx context.Context, out, errOut io.Writer) error {
	if err := checkExposure(f.frontendAddr, f.uiAddr, nil, f.allowInsecureRemote); err != nil {
		return err
	}
	rf := &f.rf
	if err := rf.validate(); err != nil {
		return err
	}
	logPath := rf.lake.dataDir.devLog()
	log, closeLog, err := consoleLogger(rf.logLevel, logPath, errOut)
	if err != nil {
		return err
	}
	defer closeLog()
	if f.date == "" {
		f.date = time.Now().AddDate(0, 0, -1).Format(time.DateOnly)
	}
	if _, err := time.Parse(time.DateOnly, f.date); err != nil {
		return fmt.Errorf("--date %q: want YYYY-MM-DD", f.date)
	}
	s := &devStack{}
	defer s.close()
	if s.reg, err = loadRegistry(); err != nil {
		return err
	}
	if err := f.startServer(ctx, s, log); err != nil {
		return err
	}
	if err := f.startWorker(ctx, s, log); err != nil {
		return err
	}
	// Access tokens (KIS's) are fetched while the rest starts, so that the
	// batch's first calls wait for their permits only.
	warmed := make(chan struct{})
	go func() {
		defer close(warmed)
		if f.noIngest {
			return
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := activities.WarmTokens(wctx, s.w.Activities(), f.batchProviders(s.reg)); err != nil && ctx.Err() == nil {
			log.Info("fetching access tokens before the batch (its calls will ask for them)", "err", err)
		}
	}()
	defer func() { <-warmed }()

	fmt.Fprintf(out, "Temporal   %s (namespace %s)\n", s.srv.FrontendHostPort(), s.srv.Namespace())
	fmt.Fprintf(out, "Web UI     %s\n", s.srv.UIURL())
	if f.sf.addr != "off" {
		f.sf.db = rf.watchDB
		st, err := startDevStatus(ctx, f.sf, s.reg, rf.lake.dataDir, s.lake, rf.lake.describe(), s.tc, s.srv.Namespace(), s.w.Limiter(), log)
		if err != nil {
			return err
		}
		defer st.Close()
		fmt.Fprintf(out, "Status     %s/ (operator %s/ops, token in %s)\n", st.URL, st.URL, st.tokenFile)
	}
	f.printStack(out, s)
	fmt.Fprintf(out, "Log        %s (on the console: warnings and errors; everything at --log-level debug)\n\n", logPath)
	if !f.noSchedules {
		fmt.Fprintln(out, "Schedules (the Web UI's Schedules page):")
		if _, err := syncSchedules(ctx, s.tc, s.reg, schedules.Options{TaskQueue: workflows.TaskQueue, CatchupWindow: f.catchup}, false, out); err != nil {
			// The batch below is dev's main job: say so and go on.
			fmt.Fprintf(out, "WARNING: %v\n", err)
		}
		fmt.Fprintln(out)
	}

	failed := false
	if !f.noIngest {
		select {
		case <-warmed:
		case <-ctx.Done():
			return nil
		}
		res, err := f.runBatch(ctx, out, s)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		failed = res.Failed > 0
		if line, err := watchSummary(ctx, s.ws, watchedDatasets(s.steps)); err != nil {
			log.Warn("summing up the watch", "err", err)
		} else {
			fmt.Fprintln(out, line)
		}
	}
	if f.once {
		if failed {
			return exitError{code: 2}
		}
		return nil
	}
	fmt.Fprintf(out, "\nUp: Web UI at %s — Ctrl-C to stop.\n", s.srv.UIURL())
	<-ctx.Done()
	return nil
}

// startServer creates the data directory and starts the codec endpoint
// (when there is a payload key), the embedded Temporal server with its
// Web UI and, unless --real, the simulator.
func (f *devFlags) startServer(ctx context.Context, s *devStack, log *slog.Logger) error {
	rf := &f.rf
	dataDir := rf.lake.dataDir.root()
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("creating data directory: %w", err)
	}
	// KIS tokens go to the token keepers, sealed with the configured
	// payload key or one created under the data directory; the Web
	// UI shows their payloads through a codec endpoint on loopback.
	var err error
	if s.ring, err = rf.keyring(log, true); err != nil {
		return err
	}
	if s.ring != nil && f.codecAddr != "off" {
		if !isLoopback(f.codecAddr) {
			return fmt.Errorf("--codec-addr %s: sluice dev serves the codec endpoint on loopback only", f.codecAddr)
		}
		if s.cs, err = startCodecServer(f.codecAddr, s.ring, "", nil); err != nil {
			return err
		}
		s.onClose(func() { s.cs.Close() })
	}
	eopts := embedded.Options{
		DataDir: rf.lake.dataDir.temporal(), FrontendAddr: f.frontendAddr, UIAddr: f.uiAddr,
		Namespace: f.namespace, Logger: log, AllowInsecureRemote: f.allowInsecureRemote,
	}
	if s.cs != nil {
		eopts.CodecEndpoint = s.cs.url
	}
	if s.srv, err = embedded.Start(ctx, eopts); err != nil {
		return fmt.Errorf("starting the embedded Temporal server: %w", err)
	}
	s.onClose(func() { _ = s.srv.Stop() })
	if s.cs != nil {
		s.cs.Allow(s.srv.UIURL())
	}
	if f.real {
		if len(f.faults) > 0 {
			return fmt.Errorf("--fault %q: faults are the simulator's, and --real calls the real providers", f.faults[0])
		}
		return nil
	}
	var faults []simulator.Fault
	for _, spec := range f.faults {
		fault, err := simulator.ParseFault(spec)
		if err != nil {
			return fmt.Errorf("--fault: %w", err)
		}
		faults = append(faults, fault)
	}
	if s.sim, err = simulator.New(simulator.Options{Registry: s.reg, RateScale: rf.rateScale, Faults: faults}); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.simAddr)
	if err != nil {
		return fmt.Errorf("listening for the simulator on %s: %w", f.simAddr, err)
	}
	hs := &http.Server{Handler: s.sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	s.onClose(func() { _ = hs.Close() })
	rf.baseURL = "http://" + ln.Addr().String()
	rf.simCredentials = true
	return nil
}

// startWorker opens the lake, connects to the embedded server, starts the
// token keepers, opens the watch store, starts the worker and the watch.
func (f *devFlags) startWorker(ctx context.Context, s *devStack, log *slog.Logger) error {
	rf := &f.rf
	var err error
	if s.lake, err = rf.lake.open(ctx); err != nil {
		return err
	}
	s.onClose(func() { _ = s.lake.Close() })
	copts := client.Options{HostPort: s.srv.FrontendHostPort(), Namespace: s.srv.Namespace(), Logger: temporalLogger(log)}
	if s.tc, err = client.Dial(copts); err != nil {
		return fmt.Errorf("connecting to the embedded Temporal: %w", err)
	}
	s.onClose(s.tc.Close)
	if kc, err := rf.tokenKeeper(ctx, s.tc, copts, s.ring); err != nil {
		return err
	} else if kc != nil {
		s.onClose(kc.Close)
	}
	ws, err := rf.watchDB.open(ctx, rf.lake.dataDir)
	if err != nil {
		return err
	}
	s.onClose(func() { _ = ws.Close() })
	s.ws = ws
	wopts := rf.workerOptions(s.reg, s.tc, workflows.TaskQueue, s.lake, log)
	wopts.Watch = ws
	if wopts.Notify, err = rf.notifications.load(); err != nil {
		return err
	}
	if wopts.BuildID == "" {
		// One process is the whole deployment, and a rebuilt binary
		// replaces it: it polls as build "dev" every time, so that the runs
		// pinned by the last one are its own (docs/deploy.md).
		wopts.BuildID = devBuildID
	}
	if f.real && !rf.simCredentials {
		wopts.Credentials = connector.EnvCredentials
	}
	if s.w, err = worker.Start(wopts); err != nil {
		return err
	}
	s.onClose(s.w.Stop)
	if s.steps, err = watchsync.Sync(ctx, s.tc, s.reg, workflows.TaskQueue); err != nil {
		return fmt.Errorf("starting the watch: %w", err)
	}
	return nil
}

// printStack prints the addresses and parts of the stack after Temporal's,
// the Web UI's and the status pages'.
func (f *devFlags) printStack(out io.Writer, s *devStack) {
	rf := &f.rf
	if s.sim != nil {
		fmt.Fprintf(out, "Simulator  %s (rate scale %g)\n", rf.baseURL, rf.rateScale)
	} else {
		fmt.Fprintln(out, "Providers  real endpoints (credentials from the environment)")
	}
	fmt.Fprintf(out, "Lake       %s\n", rf.lake.describe())
	fmt.Fprintf(out, "Watch      %d datasets probed (workflows watch/<dataset>), store %s\n", len(s.steps), rf.watchDB.describe(rf.lake.dataDir))
	if s.ring != nil {
		fmt.Fprintf(out, "KIS tokens token keepers, sealed with key %s\n", s.ring.PrimaryID())
	}
	if s.cs != nil {
		fmt.Fprintf(out, "Codec      %s (the Web UI decodes through it; tokens stay redacted)\n", s.cs.url)
	}
	if addr := s.w.MetricsAddr(); addr != "" {
		fmt.Fprintf(out, "Metrics    http://%s/metrics\n", addr)
	}
	fmt.Fprintf(out, "Registry   %d providers, %d datasets\n", len(s.reg.Providers), len(s.reg.Datasets))
}

// runBatch runs the daily ingest of --date, follows it and prints its
// summary table (with the simulator's counts when it runs).
// batchProviders are the providers the batch calls: --provider's, and
// those of --dataset's datasets; nil (every provider) when neither is set.
func (f *devFlags) batchProviders(reg *registry.Registry) []string {
	if len(f.datasets) == 0 {
		return f.providers
	}
	out := slices.Clone(f.providers)
	for _, id := range f.datasets {
		if ds := reg.Dataset(id); ds != nil && !slices.Contains(out, ds.Provider) {
			out = append(out, ds.Provider)
		}
	}
	return out
}

func (f *devFlags) runBatch(ctx context.Context, out io.Writer, s *devStack) (workflows.DailyIngestResult, error) {
	run, err := startDaily(ctx, s.tc, "sluice", workflows.DailyIngestInput{Date: f.date, Providers: f.providers, Datasets: f.datasets})
	if err != nil {
		return workflows.DailyIngestResult{}, err
	}
	fmt.Fprintf(out, "daily ingest %s: workflow %s (see it in the Web UI)\n", f.date, run.GetID())
	res, err := follow(ctx, s.tc, run, out)
	if err != nil {
		return res, err
	}
	var stats *simulator.Stats
	if s.sim != nil {
		st := s.sim.Stats()
		stats = &st
	}
	fmt.Fprintln(out)
	writeSummary(out, res, stats, batchBounds(s.reg, f.date, f.providers, f.datasets, f.rf.rateScale))
	return res, nil
}
