package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/internal/atomicfile"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/status"
	"github.com/sluicehq/sluice/watch/store"
)

func init() { register(newStatusCmd) }

// DefaultStatusAddr is where `sluice status` and `sluice dev` serve the
// status pages.
const DefaultStatusAddr = "127.0.0.1:8240"

// statusFlags are the flags of the status pages, shared by `sluice status`
// and `sluice dev`.
type statusFlags struct {
	addr     string
	db       watchDBFlag // bound by sluice status; sluice dev shares its own
	timezone string
	proxies  []netip.Prefix // --status-trusted-proxy
	public   string         // --status-public-url
}

// bind registers the flags; the address flag is named addrFlag (--addr
// for sluice status, --status-addr for sluice dev).
func (f *statusFlags) bind(fs *pflag.FlagSet, addrFlag, addrUsage string) {
	stringFlag(fs, &f.addr, addrFlag, "SLUICE_STATUS_ADDR", DefaultStatusAddr, addrUsage)
	stringFlag(fs, &f.timezone, "status-timezone", "SLUICE_STATUS_TIMEZONE", "UTC", "IANA timezone the uptime bars' days begin in")
	valueFlag(fs, trustedProxyValue{&f.proxies}, "status-trusted-proxy", "SLUICE_STATUS_TRUSTED_PROXY",
		"reverse proxies in front of the status pages, CIDR[,CIDR] (addresses too): only from them are X-Forwarded-For, X-Real-IP and X-Forwarded-Proto believed (empty: none)",
		"a comma-separated list of CIDR prefixes or addresses")
	stringFlag(fs, &f.public, "status-public-url", "SLUICE_STATUS_PUBLIC_URL", "",
		"URL readers reach the status pages at, https://host[/prefix]: the Atom feeds' links and the Statuspage API's page url are absolute under it (empty: paths)")
}

// trustedProxyValue is the pflag.Value of --status-trusted-proxy: a
// comma-separated list of CIDR prefixes or addresses
// (status.ParseTrustedProxies).
type trustedProxyValue struct{ p *[]netip.Prefix }

// String renders the list.
func (v trustedProxyValue) String() string {
	if v.p == nil {
		return ""
	}
	parts := make([]string, len(*v.p))
	for i, p := range *v.p {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

// Set parses the list, replacing any before it (the flag beats the
// variable).
func (v trustedProxyValue) Set(s string) error {
	ps, err := status.ParseTrustedProxies(s)
	if err != nil {
		return err
	}
	*v.p = ps
	return nil
}

// Type names the flag's value in help.
func (trustedProxyValue) Type() string { return "CIDRs" }

// operatorToken reads SLUICE_OPERATOR_TOKEN (or the file
// SLUICE_OPERATOR_TOKEN_FILE names); "" when neither is set.
func operatorToken() (string, error) {
	tok, err := connector.EnvCredentials(status.EnvOperatorToken)
	if errors.Is(err, connector.ErrNoCredential) && os.Getenv(status.EnvOperatorTokenFile) == "" {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if err := status.ValidateToken(tok); err != nil {
		return "", err
	}
	return tok, nil
}

// devOperatorToken is the token `sluice dev` uses: the environment's, or
// one it keeps in <data-dir>/operator-token (mode 0600), created once.
func devOperatorToken(d dataDir) (tok, file string, err error) {
	if tok, err = operatorToken(); err != nil || tok != "" {
		return tok, "", err
	}
	file = d.operatorToken()
	if b, err := os.ReadFile(file); err == nil {
		tok = strings.TrimSpace(string(b))
		if err := status.ValidateToken(tok); err != nil {
			return "", "", fmt.Errorf("%s: %w", file, err)
		}
		return tok, file, nil
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", "", fmt.Errorf("creating an operator token: %w", err)
	}
	tok = base64.RawURLEncoding.EncodeToString(raw)
	if err := writeSecretFile(file, []byte(tok+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("writing the operator token: %w", err)
	}
	return tok, file, nil
}

// writeSecretFile writes a file holding a secret: whole, mode 0600 from
// its first byte, durably (atomicfile). A variable for the tests.
var writeSecretFile = atomicfile.Write

// statusServer is a running status server.
type statusServer struct {
	URL   string
	store store.Store
	stop  context.CancelFunc
	done  chan error
}

// Close stops the server and closes its store.
func (s *statusServer) Close() {
	s.stop()
	<-s.done
	_ = s.store.Close()
}

type statusDeps struct {
	reg       *registry.Registry
	dataDir   dataDir
	lake      sink.Sink
	lakeName  string
	tc        client.Client // nil: no Temporal
	namespace string
	limiter   status.LimiterStates
	token     string
	log       *slog.Logger
}

// startStatus opens the watch store and serves the status pages on
// f.addr until Close.
func startStatus(ctx context.Context, f statusFlags, d statusDeps) (*statusServer, error) {
	loc, err := time.LoadLocation(f.timezone)
	if err != nil {
		return nil, fmt.Errorf("--status-timezone %q: %w", f.timezone, err)
	}
	if _, err := status.CheckPublicURL(f.public); err != nil {
		return nil, fmt.Errorf("--status-public-url (SLUICE_STATUS_PUBLIC_URL): %w", err)
	}
	if err := status.CheckListen(f.addr, d.token); err != nil {
		return nil, err
	}
	st, err := f.db.openExisting(ctx, d.dataDir)
	if err != nil {
		return nil, err
	}
	cfg := status.Config{Registry: d.reg, Store: st, Lake: d.lake, LakeDescription: d.lakeName, Limiter: d.limiter,
		OperatorToken: d.token, TrustedProxies: f.proxies, Location: loc, Logger: d.log, PublicURL: f.public}
	if d.lake != nil {
		cfg.Manifests = status.LakeManifests{Lake: d.lake}
	}
	if d.tc != nil {
		t := status.Temporal{Client: d.tc, Namespace: d.namespace}
		cfg.Schedules, cfg.Backfills = t, t
	}
	srv, err := status.New(cfg)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("listening for the status pages on %s: %w", f.addr, err)
	}
	sctx, stop := context.WithCancel(ctx)
	out := &statusServer{URL: "http://" + ln.Addr().String(), store: st, stop: stop, done: make(chan error, 1)}
	go func() { out.done <- srv.ServeListener(sctx, ln, nil) }()
	return out, nil
}

func newStatusCmd() *cobra.Command {
	var tf temporalFlags
	var sf statusFlags
	var lake lakeFlags
	var noTemporal bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Serve the status pages: public dataset health, and the operator page behind a token",
		Long: `Serves the status pages from the watch store, the registry, the lake and
Temporal: a public page of every dataset's state, uptime and newest period, a
page per dataset with its Changes and terms of use, a JSON API
(/api/v1/summary.json, /api/v1/datasets/ID.json), and the operator page /ops
(확인 필요, budgets, schedules, backfills, the lake's coverage, events).

/ops needs the operator token: SLUICE_OPERATOR_TOKEN, or a file named by
SLUICE_OPERATOR_TOKEN_FILE (at least 16 bytes), sent as
"Authorization: Bearer TOKEN" or through the login form. Without a token the
operator page is off, and the server refuses any address but loopback.

Behind a reverse proxy, name it with --status-trusted-proxy CIDR[,CIDR]: only
from it are X-Forwarded-For / X-Real-IP (the client whose wrong tokens are
counted) and X-Forwarded-Proto: https (Secure cookies) believed.`,
		Args: cobra.NoArgs,
		RunE: withRegistry(func(cmd *cobra.Command, reg *registry.Registry) error {
			ctx := cmd.Context()
			tok, err := operatorToken()
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
			d := statusDeps{reg: reg, dataDir: lake.dataDir, lakeName: lake.describe(), token: tok, log: log, namespace: tf.namespace}
			lk, err := lake.openExisting(ctx)
			switch {
			case errors.Is(err, sink.ErrNoLake):
				log.Warn("no lake yet: the pages show no newest period and an empty coverage map", "lake", lake.describe())
			case err != nil:
				return err
			default:
				defer lk.Close()
				d.lake = lk
			}
			if !noTemporal {
				tc, err := tf.dialLazy()
				if err != nil {
					return err
				}
				defer tc.Close()
				d.tc = tc
				d.limiter = ratelimit.NewClient(tc, ratelimit.ClientOptions{TaskQueue: tf.taskQueue})
			}
			srv, err := startStatus(ctx, sf, d)
			if err != nil {
				return err
			}
			defer srv.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "Status     %s/\n", srv.URL)
			if tok != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "Operator   %s/ops (token from %s)\n", srv.URL, tokenSource())
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "Operator   off (set %s or %s)\n", status.EnvOperatorToken, status.EnvOperatorTokenFile)
			}
			<-ctx.Done()
			return nil
		}),
	}
	fs := cmd.Flags()
	tf.bind(fs)
	lake.bind(fs)
	sf.bind(fs, "addr", "serve the status pages on HOST:PORT (a non-loopback address needs an operator token)")
	sf.db.bind(fs)
	fs.BoolVar(&noTemporal, "no-temporal", false, "do not ask Temporal (limiters, schedules, backfills): the operator page says so")
	return cmd
}

func tokenSource() string {
	if os.Getenv(status.EnvOperatorToken) != "" {
		return status.EnvOperatorToken
	}
	return status.EnvOperatorTokenFile
}

// devStatus is the status server `sluice dev` runs.
type devStatus struct {
	*statusServer
	tokenFile string
}

// startDevStatus serves the status pages for `sluice dev`: its worker's
// limiter client, its Temporal and an operator token from the environment
// or <data-dir>/operator-token.
func startDevStatus(ctx context.Context, f statusFlags, reg *registry.Registry, d dataDir, lake sink.Sink, lakeName string,
	tc client.Client, namespace string, lim status.LimiterStates, log *slog.Logger) (*devStatus, error) {
	tok, file, err := devOperatorToken(d)
	if err != nil {
		return nil, err
	}
	if file == "" {
		file = tokenSource()
	}
	s, err := startStatus(ctx, f, statusDeps{reg: reg, dataDir: d, lake: lake, lakeName: lakeName, tc: tc, namespace: namespace,
		limiter: lim, token: tok, log: log})
	if err != nil {
		return nil, err
	}
	return &devStatus{statusServer: s, tokenFile: file}, nil
}
