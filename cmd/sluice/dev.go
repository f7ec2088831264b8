package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/schedules"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/watchsync"
	"github.com/sluicehq/sluice/worker"
	"github.com/sluicehq/sluice/workflows"
)

func init() { register(newDevCmd) }

func newDevCmd() *cobra.Command {
	var rf runtimeFlags
	var sf statusFlags
	var frontendAddr, uiAddr, simAddr, codecAddr, date, namespace string
	var real, once, noIngest, noSchedules bool
	var catchup time.Duration
	var providers, datasets []string
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
(--date to choose) and prints a summary table. It then stays up for the Web
UI until Ctrl-C; --once exits after the batch, with status 2 if any dataset
failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			if err := rf.validate(); err != nil {
				return err
			}
			log, err := rf.logger()
			if err != nil {
				return err
			}
			if date == "" {
				date = time.Now().AddDate(0, 0, -1).Format(time.DateOnly)
			}
			if _, err := time.Parse(time.DateOnly, date); err != nil {
				return fmt.Errorf("--date %q: want YYYY-MM-DD", date)
			}
			reg, err := loadRegistry()
			if err != nil {
				return err
			}
			dataDir := rf.lake.dataDir.root()
			if err := os.MkdirAll(dataDir, 0o755); err != nil {
				return fmt.Errorf("creating data directory: %w", err)
			}
			// KIS tokens go to the token keepers, sealed with the configured
			// payload key or one created under the data directory; the Web
			// UI shows their payloads through a codec endpoint on loopback.
			ring, err := rf.keyring(log, true)
			if err != nil {
				return err
			}
			var cs *codecServer
			if ring != nil && codecAddr != "off" {
				if !isLoopback(codecAddr) {
					return fmt.Errorf("--codec-addr %s: sluice dev serves the codec endpoint on loopback only", codecAddr)
				}
				if cs, err = startCodecServer(codecAddr, ring, "", nil); err != nil {
					return err
				}
				defer cs.Close()
			}
			eopts := embedded.Options{
				DataDir: rf.lake.dataDir.temporal(), FrontendAddr: frontendAddr, UIAddr: uiAddr,
				Namespace: namespace, Logger: log,
			}
			if cs != nil {
				eopts.CodecEndpoint = cs.url
			}
			srv, err := embedded.Start(ctx, eopts)
			if err != nil {
				return fmt.Errorf("starting the embedded Temporal server: %w", err)
			}
			defer srv.Stop()
			if cs != nil {
				cs.Allow(srv.UIURL())
			}

			var sim *simulator.Simulator
			if !real {
				sim, err = simulator.New(simulator.Options{Registry: reg, RateScale: rf.rateScale})
				if err != nil {
					return err
				}
				ln, err := net.Listen("tcp", simAddr)
				if err != nil {
					return fmt.Errorf("listening for the simulator on %s: %w", simAddr, err)
				}
				hs := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
				go func() { _ = hs.Serve(ln) }()
				defer hs.Close()
				rf.baseURL = "http://" + ln.Addr().String()
				rf.simCredentials = true
			}
			lake, err := rf.lake.open(ctx)
			if err != nil {
				return err
			}
			defer lake.Close()
			copts := client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace(), Logger: temporalLogger(log)}
			tc, err := client.Dial(copts)
			if err != nil {
				return fmt.Errorf("connecting to the embedded Temporal: %w", err)
			}
			defer tc.Close()
			if kc, err := rf.tokenKeeper(ctx, tc, copts, ring); err != nil {
				return err
			} else if kc != nil {
				defer kc.Close()
			}
			ws, err := rf.watchDB.open(ctx, rf.lake.dataDir)
			if err != nil {
				return err
			}
			defer ws.Close()
			wopts := rf.workerOptions(reg, tc, workflows.TaskQueue, lake, log)
			wopts.Watch = ws
			if real && !rf.simCredentials {
				wopts.Credentials = connector.EnvCredentials
			}
			w, err := worker.Start(wopts)
			if err != nil {
				return err
			}
			defer w.Stop()
			steps, err := watchsync.Sync(ctx, tc, reg, workflows.TaskQueue)
			if err != nil {
				return fmt.Errorf("starting the watch: %w", err)
			}

			fmt.Fprintf(out, "Temporal   %s (namespace %s)\n", srv.FrontendHostPort(), srv.Namespace())
			fmt.Fprintf(out, "Web UI     %s\n", srv.UIURL())
			if sf.addr != "off" {
				sf.db = rf.watchDB
				st, err := startDevStatus(ctx, sf, reg, rf.lake.dataDir, lake, rf.lake.describe(), tc, srv.Namespace(), w.Limiter(), log)
				if err != nil {
					return err
				}
				defer st.Close()
				fmt.Fprintf(out, "Status     %s/ (operator %s/ops, token in %s)\n", st.URL, st.URL, st.tokenFile)
			}
			if sim != nil {
				fmt.Fprintf(out, "Simulator  %s (rate scale %g)\n", rf.baseURL, rf.rateScale)
			} else {
				fmt.Fprintln(out, "Providers  real endpoints (credentials from the environment)")
			}
			fmt.Fprintf(out, "Lake       %s\n", rf.lake.describe())
			fmt.Fprintf(out, "Watch      %d datasets probed (workflows watch/<dataset>), store %s\n", len(steps), rf.watchDB.describe(rf.lake.dataDir))
			if ring != nil {
				fmt.Fprintf(out, "KIS tokens token keepers, sealed with key %s\n", ring.PrimaryID())
			}
			if cs != nil {
				fmt.Fprintf(out, "Codec      %s (the Web UI decodes through it; tokens stay redacted)\n", cs.url)
			}
			if addr := w.MetricsAddr(); addr != "" {
				fmt.Fprintf(out, "Metrics    http://%s/metrics\n", addr)
			}
			fmt.Fprintf(out, "Registry   %d providers, %d datasets\n\n", len(reg.Providers), len(reg.Datasets))
			if !noSchedules {
				fmt.Fprintln(out, "Schedules (the Web UI's Schedules page):")
				if _, err := syncSchedules(ctx, tc, reg, schedules.Options{TaskQueue: workflows.TaskQueue, CatchupWindow: catchup}, false, out); err != nil {
					// The batch below is dev's main job: say so and go on.
					fmt.Fprintf(out, "WARNING: %v\n", err)
				}
				fmt.Fprintln(out)
			}

			failed := false
			if !noIngest {
				run, err := startDaily(ctx, tc, "sluice", workflows.DailyIngestInput{Date: date, Providers: providers, Datasets: datasets})
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "daily ingest %s: workflow %s (see it in the Web UI)\n", date, run.GetID())
				res, err := follow(ctx, tc, run, out)
				if err != nil {
					if errors.Is(err, context.Canceled) {
						return nil
					}
					return err
				}
				var stats *simulator.Stats
				if sim != nil {
					s := sim.Stats()
					stats = &s
				}
				fmt.Fprintln(out)
				writeSummary(out, res, stats)
				failed = res.Failed > 0
			}
			if once {
				if failed {
					return exitError{code: 2}
				}
				return nil
			}
			fmt.Fprintf(out, "\nUp: Web UI at %s — Ctrl-C to stop.\n", srv.UIURL())
			<-ctx.Done()
			return nil
		},
	}
	fs := cmd.Flags()
	rf.bind(fs, "127.0.0.1:9464")
	stringFlag(fs, &frontendAddr, "frontend-addr", "SLUICE_FRONTEND_ADDR", embedded.DefaultFrontendAddr, "embedded Temporal frontend HOST:PORT")
	stringFlag(fs, &uiAddr, "ui-addr", "SLUICE_UI_ADDR", embedded.DefaultUIAddr, "Web UI HOST:PORT (off: no UI)")
	stringFlag(fs, &namespace, "namespace", "SLUICE_NAMESPACE", embedded.DefaultNamespace, "Temporal namespace")
	stringFlag(fs, &codecAddr, "codec-addr", "SLUICE_CODEC_ADDR", "127.0.0.1:0", "codec endpoint the Web UI decodes sealed payloads through, on loopback (port 0: a free port; off: none)")
	sf.bind(fs, "status-addr", "serve the status pages on HOST:PORT (off: none)")
	stringFlag(fs, &simAddr, "sim-addr", "SLUICE_SIM_ADDR", "127.0.0.1:0", "simulator HOST:PORT (port 0: a free port)")
	fs.StringVar(&date, "date", "", "logical date of the batch, YYYY-MM-DD (default: yesterday)")
	fs.BoolVar(&real, "real", false, "call the real provider endpoints instead of the simulator (credentials from the environment)")
	fs.BoolVar(&once, "once", false, "exit after the batch instead of staying up for the Web UI")
	fs.BoolVar(&noIngest, "no-ingest", false, "start everything but run no batch")
	fs.BoolVar(&noSchedules, "no-schedules", false, "do not sync the registry's schedules into the embedded server")
	durationFlag(fs, &catchup, "catchup-window", "SLUICE_SCHEDULE_CATCHUP_WINDOW", schedules.DefaultCatchupWindow,
		"the schedules' catch-up window: runs missed while the server was down are taken when it starts again if no older than this")
	fs.StringSliceVar(&providers, "provider", nil, "only this provider's datasets in the batch (repeatable)")
	fs.StringSliceVar(&datasets, "dataset", nil, "only this dataset in the batch (repeatable)")
	return cmd
}
