package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/codec"
	"github.com/sluicehq/sluice/embedded"
)

func init() { register(newServerCmd) }

func newServerCmd() *cobra.Command {
	var frontendAddr, uiAddr, namespace, logLevel, codecAddr, databaseURL, nodeAddr string
	var nodePorts int
	var allowInsecureRemote bool
	var keys keyFlags
	var dataDir dataDir
	var tlsOpts embedded.TLS
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run only the embedded Temporal server and Web UI until interrupted",
		Long: `Starts the Temporal server embedded in Sluice, with SQLite persistence in
<data-dir>/temporal/temporal.db (the same database "sluice dev" uses, so
workflow history survives restarts), and its Web UI, prints their
addresses and runs until Ctrl-C. Workers and ingest commands started
elsewhere connect to the printed frontend address. For single-machine dev
and demo use.

With --temporal-db postgres://USER:PASSWORD@HOST:PORT/DATABASE, Temporal
keeps its persistence and visibility in that PostgreSQL database instead
(schemas "temporal" and "temporal_visibility", created or upgraded at
start as temporal-sql-tool would, with the namespace and Sluice's search
attributes). Every "sluice server" started on the same database joins one
Temporal cluster: start a second one on another host (or other ports) and
either frontend serves the workers; when one node goes away the others
take over its workflows. The password is never printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
			opts := embedded.Options{
				DataDir:      dataDir.temporal(),
				DatabaseURL:  databaseURL,
				NodeAddr:     nodeAddr,
				NodePorts:    nodePorts,
				FrontendAddr: frontendAddr,
				UIAddr:       uiAddr,
				Namespace:    namespace,
				LogLevel:     logLevel,
				Logger:       log,
			}
			if tlsOpts != (embedded.TLS{}) {
				opts.TLS = &tlsOpts
			}
			if err := checkExposure(frontendAddr, uiAddr, opts.TLS, allowInsecureRemote); err != nil {
				return err
			}
			opts.AllowInsecureRemote = allowInsecureRemote
			// With a payload key, the Web UI decodes the token keepers'
			// payloads through a codec endpoint on loopback.
			var cs *codecServer
			ring, err := keys.load()
			switch {
			case errors.Is(err, codec.ErrNoKey):
			case err != nil:
				return err
			case codecAddr != "off" && uiAddr != embedded.UIOff:
				if !isLoopback(codecAddr) {
					return fmt.Errorf("--codec-addr %s: sluice server serves the codec endpoint on loopback only (see sluice codec serve)", codecAddr)
				}
				if cs, err = startCodecServer(codecAddr, ring, "", nil); err != nil {
					return err
				}
				defer cs.Close()
				opts.CodecEndpoint = cs.url
			}
			srv, err := embedded.Start(ctx, opts)
			if err != nil {
				return fmt.Errorf("starting the embedded Temporal server: %w", err)
			}
			out := cmd.OutOrStdout()
			security := "plaintext"
			if opts.TLS != nil {
				security = "TLS"
				if opts.TLS.ClientCAFile != "" {
					security = "mutual TLS"
				}
			}
			fmt.Fprintf(out, "Temporal   %s (namespace %s, %s)\n", srv.FrontendHostPort(), srv.Namespace(), security)
			if u := srv.UIURL(); u != "" {
				fmt.Fprintf(out, "Web UI     %s\n", u)
			}
			if cs != nil {
				cs.Allow(srv.UIURL())
				fmt.Fprintf(out, "Codec      %s\n", cs.url)
			}
			fmt.Fprintf(out, "Database   %s\n", srv.Database())
			<-ctx.Done()
			fmt.Fprintln(out, "stopping")
			if err := srv.Stop(); err != nil {
				return fmt.Errorf("stopping the embedded Temporal server: %w", err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	dataDir.bind(fs, "Temporal's database lives in its temporal/ subdirectory")
	stringFlag(fs, &frontendAddr, "frontend-addr", "SLUICE_FRONTEND_ADDR", embedded.DefaultFrontendAddr, "Temporal frontend gRPC HOST:PORT (port 0: any free port)")
	stringFlag(fs, &uiAddr, "ui-addr", "SLUICE_UI_ADDR", embedded.DefaultUIAddr, "Web UI HOST:PORT (port 0: any free port; off: no UI)")
	stringFlag(fs, &namespace, "namespace", "SLUICE_NAMESPACE", embedded.DefaultNamespace, "Temporal namespace, created if missing")
	stringFlag(fs, &databaseURL, "temporal-db", "SLUICE_TEMPORAL_DB", "", "PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE) for Temporal's persistence and visibility instead of SQLite; servers on one database form a cluster")
	stringFlag(fs, &nodeAddr, "node-addr", "SLUICE_NODE_ADDR", "", "with --temporal-db: IP address other nodes reach this node's internal services at (default: the frontend's host)")
	intFlag(fs, &nodePorts, "node-ports", "SLUICE_NODE_PORTS", 0, "with --temporal-db: first of 8 consecutive ports, at most 32760, for the node's internal services (0: free ports from 20000 to 32767)")
	allowInsecureRemoteFlag(fs, &allowInsecureRemote)
	stringFlag(fs, &codecAddr, "codec-addr", "SLUICE_CODEC_ADDR", "127.0.0.1:0", "with a payload key: the codec endpoint the Web UI decodes sealed payloads through, on loopback (port 0: a free port; off: none)")
	keys.bind(fs)
	stringFlag(fs, &tlsOpts.CertFile, "tls-cert-file", "SLUICE_SERVER_TLS_CERT_FILE", "", "serve the frontend over TLS with this PEM certificate")
	stringFlag(fs, &tlsOpts.KeyFile, "tls-key-file", "SLUICE_SERVER_TLS_KEY_FILE", "", "PEM private key of --tls-cert-file")
	stringFlag(fs, &tlsOpts.CAFile, "tls-ca-file", "SLUICE_SERVER_TLS_CA_FILE", "", "PEM bundle of the CA that signed --tls-cert-file, for the server's own clients (system worker, Web UI)")
	stringFlag(fs, &tlsOpts.ClientCAFile, "tls-client-ca-file", "SLUICE_SERVER_TLS_CLIENT_CA_FILE", "", "require client certificates signed by a CA in this PEM bundle (mutual TLS)")
	stringFlag(fs, &tlsOpts.ClientCertFile, "tls-client-cert-file", "SLUICE_SERVER_TLS_CLIENT_CERT_FILE", "", "with mutual TLS: the PEM certificate the server's own clients present")
	stringFlag(fs, &tlsOpts.ClientKeyFile, "tls-client-key-file", "SLUICE_SERVER_TLS_CLIENT_KEY_FILE", "", "PEM private key of --tls-client-cert-file")
	stringFlag(fs, &tlsOpts.ServerName, "tls-server-name", "SLUICE_SERVER_TLS_SERVER_NAME", "", "name the server's own clients verify the certificate against (default: the frontend host)")
	stringFlag(fs, &logLevel, "temporal-log-level", "SLUICE_TEMPORAL_LOG_LEVEL", embedded.DefaultLogLevel, "level of the Temporal server's own logs: debug, info, warn, error")
	return cmd
}
