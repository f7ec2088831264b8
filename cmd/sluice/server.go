package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/sink"
)

func init() { register(newServerCmd) }

func newServerCmd() *cobra.Command {
	var dataDir, frontendAddr, uiAddr, namespace, logLevel string
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run only the embedded Temporal server and Web UI until interrupted",
		Long: `Starts the Temporal server embedded in Sluice, with SQLite persistence in
<data-dir>/temporal/temporal.db (the same database "sluice dev" uses, so
workflow history survives restarts), and its Web UI, prints their
addresses and runs until Ctrl-C. Workers and ingest commands started
elsewhere connect to the printed frontend address. For single-machine dev
and demo use; production runs Temporal from the compose stack.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
			srv, err := embedded.Start(ctx, embedded.Options{
				DataDir:      filepath.Join(dataDir, "temporal"),
				FrontendAddr: frontendAddr,
				UIAddr:       uiAddr,
				Namespace:    namespace,
				LogLevel:     logLevel,
				Logger:       log,
			})
			if err != nil {
				return fmt.Errorf("starting the embedded Temporal server: %w", err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Temporal   %s (namespace %s)\n", srv.FrontendHostPort(), srv.Namespace())
			if u := srv.UIURL(); u != "" {
				fmt.Fprintf(out, "Web UI     %s\n", u)
			}
			fmt.Fprintf(out, "Database   %s\n", filepath.Join(dataDir, "temporal", "temporal.db"))
			<-ctx.Done()
			fmt.Fprintln(out, "stopping")
			if err := srv.Stop(); err != nil {
				return fmt.Errorf("stopping the embedded Temporal server: %w", err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	stringFlag(fs, &dataDir, "data-dir", sink.EnvDataDir, sink.DefaultDataDir, "Sluice's state directory; Temporal's database lives in its temporal/ subdirectory")
	stringFlag(fs, &frontendAddr, "frontend-addr", "SLUICE_FRONTEND_ADDR", embedded.DefaultFrontendAddr, "Temporal frontend gRPC HOST:PORT (port 0: any free port)")
	stringFlag(fs, &uiAddr, "ui-addr", "SLUICE_UI_ADDR", embedded.DefaultUIAddr, "Web UI HOST:PORT (port 0: any free port; off: no UI)")
	stringFlag(fs, &namespace, "namespace", "SLUICE_NAMESPACE", embedded.DefaultNamespace, "Temporal namespace, created if missing")
	stringFlag(fs, &logLevel, "temporal-log-level", "SLUICE_TEMPORAL_LOG_LEVEL", embedded.DefaultLogLevel, "level of the Temporal server's own logs: debug, info, warn, error")
	return cmd
}
