package main

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/internal/testcerts"
	"github.com/sluicehq/sluice/tokenkeeper"
)

const canaryAPIKey = "tcld-canary-api-key-0123456789"

func writeCerts(t *testing.T) testcerts.Files {
	t.Helper()
	certs, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return certs
}

// clearTemporalEnv unsets every variable the connection flags read, so
// that the machine's environment cannot configure the test.
func clearTemporalEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SLUICE_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func bindTemporal(t *testing.T, args ...string) *temporalFlags {
	t.Helper()
	var tf temporalFlags
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	tf.bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &tf
}

func TestTemporalFlagsRefuseBadSettings(t *testing.T) {
	certs := writeCerts(t)
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"cert without key", []string{"--tls-cert-file", certs.ClientCert}, nil, "needs its key"},
		{"key without cert", nil, map[string]string{envTLSKey: "-----BEGIN EC PRIVATE KEY-----"}, "needs its certificate"},
		{"key and cert mismatch", []string{"--tls-cert-file", certs.ClientCert, "--tls-key-file", certs.ServerKey}, nil, "loading the client certificate"},
		{"CA that is no PEM", []string{"--tls-ca-file", certs.ClientKey}, nil, "holds no PEM certificate"},
		{"missing CA file", []string{"--tls-ca-file", "/nonexistent/ca.pem"}, nil, "/nonexistent/ca.pem"},
		{"file and variable", []string{"--tls-ca-file", certs.CA}, map[string]string{envTLSCA: "pem"}, "set one"},
		{"API key in clear", []string{"--tls=false"}, map[string]string{envAPIKey: canaryAPIKey}, "only ever sent over TLS"},
		{"API key in clear by env", nil, map[string]string{envAPIKey: canaryAPIKey, "SLUICE_TLS": "false"}, "only ever sent over TLS"},
		{"API key with whitespace", nil, map[string]string{envAPIKey: "two words"}, "empty or holds whitespace"},
		{"TLS off with a CA", []string{"--tls=false", "--tls-ca-file", certs.CA}, nil, "contradicts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearTemporalEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			tf := bindTemporal(t, tc.args...)
			_, _, err := tf.options(slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("options = %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), canaryAPIKey) || strings.Contains(err.Error(), "two words") {
				t.Errorf("the error quotes the key: %v", err)
			}
		})
	}
}

func TestTemporalFlagsBuildTheConnection(t *testing.T) {
	certs := writeCerts(t)
	clearTemporalEnv(t)
	tf := bindTemporal(t)
	opts, conn, err := tf.options(slog.New(slog.DiscardHandler))
	if err != nil || opts.ConnectionOptions.TLS != nil || opts.Credentials != nil || conn.describe() != "plaintext" {
		t.Fatalf("defaults: %+v %v %v", opts.ConnectionOptions, opts.Credentials, err)
	}
	// An API key alone turns TLS on against the system roots.
	keyFile := filepath.Join(t.TempDir(), "api-key")
	os.WriteFile(keyFile, []byte(canaryAPIKey+"\n"), 0o600)
	tf = bindTemporal(t, "--api-key-file", keyFile, "--temporal", "ns.acct.tmprl.cloud:7233", "--namespace", "ns.acct")
	opts, conn, err = tf.options(slog.New(slog.DiscardHandler))
	if err != nil || opts.ConnectionOptions.TLS == nil || opts.ConnectionOptions.TLS.RootCAs != nil || opts.Credentials == nil ||
		conn.describe() != "TLS, API key" || opts.HostPort != "ns.acct.tmprl.cloud:7233" {
		t.Fatalf("API key: %+v %v", opts, err)
	}
	// Everything from the environment: mutual TLS with a server name.
	ca, _ := os.ReadFile(certs.CA)
	crt, _ := os.ReadFile(certs.ClientCert)
	key, _ := os.ReadFile(certs.ClientKey)
	t.Setenv(envTLSCA, string(ca))
	t.Setenv(envTLSCrt, string(crt))
	t.Setenv(envTLSKey, string(key))
	t.Setenv("SLUICE_TLS_SERVER_NAME", "temporal.internal")
	tf = bindTemporal(t)
	opts, conn, err = tf.options(slog.New(slog.DiscardHandler))
	if err != nil || conn.describe() != "mutual TLS" {
		t.Fatalf("mutual TLS from the environment: %v %v", conn.describe(), err)
	}
	if c := opts.ConnectionOptions.TLS; c.RootCAs == nil || len(c.Certificates) != 1 || c.ServerName != "temporal.internal" || c.MinVersion < tls.VersionTLS12 {
		t.Errorf("TLS config %+v", c)
	}
}

// fakeFrontend is a TLS gRPC server answering GetSystemInfo (what the SDK
// asks on connecting) and recording the request metadata.
type fakeFrontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	mu   sync.Mutex
	auth []string
}

func (f *fakeFrontend) GetSystemInfo(ctx context.Context, _ *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.auth = append(f.auth, md.Get("authorization")...)
	f.mu.Unlock()
	return &workflowservice.GetSystemInfoResponse{}, nil
}

// TestAPIKeyIsSentAsBearerOverTLS: the API key reaches the server as
// `authorization: Bearer <key>`, over TLS, and appears in no error.
func TestAPIKeyIsSentAsBearerOverTLS(t *testing.T) {
	certs := writeCerts(t)
	pair, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeFrontend{}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}})))
	workflowservice.RegisterWorkflowServiceServer(gs, f)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)

	clearTemporalEnv(t)
	t.Setenv(envAPIKey, canaryAPIKey)
	tf := bindTemporal(t, "--temporal", ln.Addr().String(), "--tls-ca-file", certs.CA)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tc, _, err := tf.dial(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	tc.Close()
	f.mu.Lock()
	auth := f.auth
	f.mu.Unlock()
	if len(auth) == 0 || auth[0] != "Bearer "+canaryAPIKey {
		t.Errorf("authorization sent: %q", auth)
	}
	// Without the CA the handshake fails; the error names the address,
	// never the key.
	tf = bindTemporal(t, "--temporal", ln.Addr().String())
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if _, _, err := tf.dial(ctx2, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("a server signed by an unknown CA was trusted")
	} else if strings.Contains(err.Error(), canaryAPIKey) || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Errorf("dial error: %v", err)
	}
}

// startTLSServer runs an embedded Temporal with mutual TLS.
func startTLSServer(t *testing.T, certs testcerts.Files) *embedded.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Options{DataDir: t.TempDir(), FrontendAddr: "127.0.0.1:0", UIAddr: embedded.UIOff,
		Logger: slog.New(slog.DiscardHandler),
		TLS: &embedded.TLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, CAFile: certs.CA, ClientCAFile: certs.CA,
			ClientCertFile: certs.ClientCert, ClientKeyFile: certs.ClientKey}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

func runSluice(ctx context.Context, args ...string) (string, error) {
	root := newRootCmd()
	var out syncBuffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// TestCommandsOverMutualTLS runs `sluice events`, `sluice ingest` and
// `sluice worker` against an embedded server that requires mutual TLS:
// without the CA, or without a client certificate, each is refused; with
// both, events lists, ingest starts its workflow and the worker (with a
// payload key) polls both its task queue and the token keepers'.
func TestCommandsOverMutualTLS(t *testing.T) {
	certs := writeCerts(t)
	srv := startTLSServer(t, certs)
	clearTemporalEnv(t)
	addr := srv.FrontendHostPort()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	full := []string{"--temporal", addr, "--tls-ca-file", certs.CA, "--tls-cert-file", certs.ClientCert, "--tls-key-file", certs.ClientKey}
	for name, args := range map[string][]string{
		"plaintext":             {"--temporal", addr},
		"without the CA":        {"--temporal", addr, "--tls-cert-file", certs.ClientCert, "--tls-key-file", certs.ClientKey},
		"without a client cert": {"--temporal", addr, "--tls-ca-file", certs.CA},
	} {
		cctx, ccancel := context.WithTimeout(ctx, 15*time.Second)
		if out, err := runSluice(cctx, append([]string{"events"}, args...)...); err == nil || !strings.Contains(err.Error(), "connecting to Temporal at "+addr) {
			t.Errorf("events %s: %v, want a refused connection: %s", name, err, out)
		}
		ccancel()
	}
	// No event was recorded yet (the events workflow does not exist):
	// events reaches the server and says so, exit 0.
	out, err := runSluice(ctx, append([]string{"events"}, full...)...)
	if err != nil || !strings.Contains(out, "no events recorded yet") {
		t.Fatalf("events over mutual TLS, before the first event: %v\n%s", err, out)
	}
	out, err = runSluice(ctx, append([]string{"ingest", "--date", "2026-01-02", "--detach"}, full...)...)
	if err != nil || !strings.Contains(out, "workflow daily-2026-01-02") {
		t.Fatalf("ingest over mutual TLS: %v\n%s", err, out)
	}

	// The worker: with a payload key it also runs the token keepers.
	keyFile := filepath.Join(t.TempDir(), "codec.key")
	if _, err := runSluice(ctx, "codec", "keygen", "--out", keyFile); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		// Its provider calls go to a closed loopback port: the batch
		// started above must never reach a real provider.
		_, err := runSluice(wctx, append([]string{"worker", "--data-dir", t.TempDir(), "--metrics-addr", "", "--log-level", "error",
			"--base-url", "http://127.0.0.1:9",
			"--codec-key-file", keyFile, "--token-store", "keeper"}, full...)...)
		done <- err
	}()
	tlsCfg, _, _ := bindTemporal(t, full...).options(slog.New(slog.DiscardHandler))
	tc, err := client.DialContext(ctx, tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	for _, q := range []string{"sluice", tokenkeeper.TaskQueue("sluice")} {
		for {
			resp, err := tc.DescribeTaskQueue(ctx, q, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
			if err == nil && len(resp.GetPollers()) > 0 {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("the worker exited: %v", err)
			case <-ctx.Done():
				t.Fatalf("no worker polls %s over mutual TLS", q)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	wcancel()
	if err := <-done; err != nil {
		t.Errorf("worker: %v", err)
	}
}

// TestEveryCommandConnectsThroughTheBinder keeps the connection settings
// in one place: every command with a --temporal flag has the TLS and API
// key flags too (it bound temporalFlags), and no source file but the
// binder (and `sluice dev`, which dials the server it embeds) dials
// Temporal itself — a new command gets TLS and API keys for free, or
// fails here.
func TestEveryCommandConnectsThroughTheBinder(t *testing.T) {
	clearTemporalEnv(t)
	var visit func(c *cobra.Command)
	checked := 0
	visit = func(c *cobra.Command) {
		if c.Flags().Lookup("temporal") != nil {
			checked++
			for _, f := range []string{"namespace", "tls", "tls-ca-file", "tls-cert-file", "tls-key-file", "tls-server-name", "api-key-file"} {
				if c.Flags().Lookup(f) == nil {
					t.Errorf("`%s` has --temporal but not --%s: bind temporalFlags", c.CommandPath(), f)
				}
			}
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(newRootCmd())
	if checked < 3 {
		t.Errorf("only %d commands connect to Temporal: the check checked nothing", checked)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	dial := regexp.MustCompile(`client\.(Dial|DialContext|NewLazyClient|NewClient)\(`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "temporal.go" || f == "dev.go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if loc := dial.FindIndex(src); loc != nil {
			t.Errorf("%s dials Temporal itself (%s): use temporalFlags.dial or dialQuiet", f, src[loc[0]:loc[1]])
		}
	}
}

// TestDocsListEveryBinderUser: the TLS section of docs/production.md (the
// README links to it) names every command that binds temporalFlags (has
// --temporal), and no other.
func TestDocsListEveryBinderUser(t *testing.T) {
	clearTemporalEnv(t)
	want := map[string]bool{}
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		if c.Flags().Lookup("temporal") != nil {
			want[strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")] = true
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(newRootCmd())
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "production.md"))
	if err != nil {
		t.Fatal(err)
	}
	const heading = "## Connecting to Temporal: TLS, mutual TLS, Temporal Cloud"
	_, section, ok := strings.Cut(string(readme), heading)
	if !ok {
		t.Fatalf("docs/production.md has no section %q", heading)
	}
	intro, _, ok := strings.Cut(section, "takes the same flags")
	if !ok {
		t.Fatalf("docs/production.md's section %q does not say which commands take the flags", heading)
	}
	got := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z][a-z -]*)`").FindAllStringSubmatch(intro, -1) {
		name, _, _ := strings.Cut(m[1], " --") // `lake verify --repair`
		got[strings.TrimSpace(name)] = true
	}
	for c := range want {
		if !got[c] {
			t.Errorf("docs/production.md's TLS section does not list `%s`, which connects to Temporal", c)
		}
	}
	for c := range got {
		if !want[c] {
			t.Errorf("docs/production.md's TLS section lists `%s`, which has no --temporal flag", c)
		}
	}
	if len(want) < 3 {
		t.Errorf("only %d commands connect to Temporal: the check checked nothing", len(want))
	}
}
