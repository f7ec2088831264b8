package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/workflows"
)

// temporalFlags are the connection flags of every command that talks to a
// Temporal server (worker, ingest, events, and any command added later):
// address, namespace and task queue, TLS (server CA, client certificate
// for mutual TLS, server name) and a Temporal Cloud API key. Key material
// comes from files named by flags or SLUICE_*_FILE variables, or from the
// variables themselves (SLUICE_TLS_CA, SLUICE_TLS_CERT, SLUICE_TLS_KEY,
// SLUICE_API_KEY: PEM or the key as text); it is never a flag value (that
// would show in ps) and never logged.
type temporalFlags struct {
	addr       string
	namespace  string
	taskQueue  string
	tls        bool
	caFile     string
	certFile   string
	keyFile    string
	serverName string
	apiKeyFile string
	fs         *pflag.FlagSet
}

// Environment variables holding key material itself (no flag reads them).
const (
	envTLSCA  = "SLUICE_TLS_CA"
	envTLSCrt = "SLUICE_TLS_CERT"
	envTLSKey = "SLUICE_TLS_KEY"
	envAPIKey = "SLUICE_API_KEY"
)

func (t *temporalFlags) bind(fs *pflag.FlagSet) {
	t.fs = fs
	stringFlag(fs, &t.addr, "temporal", "SLUICE_TEMPORAL", "127.0.0.1:7233", "Temporal frontend HOST:PORT")
	stringFlag(fs, &t.namespace, "namespace", "SLUICE_NAMESPACE", "default", "Temporal namespace")
	stringFlag(fs, &t.taskQueue, "task-queue", "SLUICE_TASK_QUEUE", workflows.TaskQueue, "task queue of Sluice's workflows and activities")
	boolFlag(fs, &t.tls, "tls", "SLUICE_TLS", false, "connect over TLS, verifying the server against the system's roots (implied by the other --tls-* settings and by an API key)")
	stringFlag(fs, &t.caFile, "tls-ca-file", "SLUICE_TLS_CA_FILE", "", "PEM bundle of the CAs that sign the server's certificate, instead of the system's roots (or PEM in "+envTLSCA+")")
	stringFlag(fs, &t.certFile, "tls-cert-file", "SLUICE_TLS_CERT_FILE", "", "PEM client certificate for mutual TLS (or PEM in "+envTLSCrt+")")
	stringFlag(fs, &t.keyFile, "tls-key-file", "SLUICE_TLS_KEY_FILE", "", "PEM private key of the client certificate (or PEM in "+envTLSKey+")")
	stringFlag(fs, &t.serverName, "tls-server-name", "SLUICE_TLS_SERVER_NAME", "", "name the server's certificate must carry (default: the host of --temporal)")
	stringFlag(fs, &t.apiKeyFile, "api-key-file", "SLUICE_API_KEY_FILE", "", "file holding a Temporal Cloud API key (or the key in "+envAPIKey+"), sent as Authorization: Bearer over TLS")
	annotateSecret(fs, "tls-ca-file", envTLSCA)
	annotateSecret(fs, "tls-cert-file", envTLSCrt)
	annotateSecret(fs, "tls-key-file", envTLSKey)
	annotateSecret(fs, "api-key-file", envAPIKey)
}

// material reads key material from the file a flag names, or from the
// variable env; both set is an error naming them.
func material(flag, file, env string) (data []byte, source string, err error) {
	v := os.Getenv(env)
	switch {
	case file != "" && strings.TrimSpace(v) != "":
		return nil, "", fmt.Errorf("both --%s (or %s_FILE) and %s are set: set one", flag, env, env)
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, "", fmt.Errorf("--%s: %w", flag, err)
		}
		return data, file, nil
	case strings.TrimSpace(v) != "":
		return []byte(v), env, nil
	}
	return nil, "", nil
}

// warnWide warns when a file holding a private key can be read by anyone
// but its owner.
func warnWide(log *slog.Logger, flag, path string) {
	if path == "" {
		return
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		log.Warn("a secret file is readable by others than its owner; make it 0600", "flag", "--"+flag, "file", path, "mode", fmt.Sprintf("%04o", st.Mode().Perm()))
	}
}

// connection is what temporalFlags resolve to: the TLS configuration
// (nil: plaintext) and the API key ("" : none).
type connection struct {
	tls    *tls.Config
	apiKey string
	mutual bool
}

func (t *temporalFlags) resolve(log *slog.Logger) (connection, error) {
	var c connection
	ca, caSrc, err := material("tls-ca-file", t.caFile, envTLSCA)
	if err != nil {
		return c, err
	}
	cert, certSrc, err := material("tls-cert-file", t.certFile, envTLSCrt)
	if err != nil {
		return c, err
	}
	key, keySrc, err := material("tls-key-file", t.keyFile, envTLSKey)
	if err != nil {
		return c, err
	}
	apiKey, apiSrc, err := material("api-key-file", t.apiKeyFile, envAPIKey)
	if err != nil {
		return c, err
	}
	warnWide(log, "tls-key-file", t.keyFile)
	warnWide(log, "api-key-file", t.apiKeyFile)
	if apiKey != nil {
		c.apiKey = strings.TrimSpace(string(apiKey))
		if c.apiKey == "" || strings.ContainsAny(c.apiKey, "\r\n\t ") {
			return c, fmt.Errorf("the API key in %s is empty or holds whitespace", apiSrc)
		}
	}
	explicitPlain := !t.tls && (t.fs != nil && t.fs.Changed("tls") || os.Getenv("SLUICE_TLS") != "")
	want := t.tls || ca != nil || cert != nil || key != nil || t.serverName != "" || c.apiKey != ""
	if !want {
		return c, nil
	}
	if explicitPlain {
		if c.apiKey != "" {
			return c, errors.New("an API key is only ever sent over TLS: drop --tls=false (SLUICE_TLS=false)")
		}
		return c, errors.New("--tls=false (SLUICE_TLS=false) contradicts the --tls-* settings given")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.serverName}
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return c, fmt.Errorf("the CA bundle in %s holds no PEM certificate", caSrc)
		}
		cfg.RootCAs = pool
	}
	switch {
	case cert != nil && key != nil:
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return c, fmt.Errorf("loading the client certificate (%s) and key (%s): %w", certSrc, keySrc, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
		c.mutual = true
	case cert != nil:
		return c, fmt.Errorf("a client certificate (%s) needs its key: set --tls-key-file or %s", certSrc, envTLSKey)
	case key != nil:
		return c, fmt.Errorf("a client key (%s) needs its certificate: set --tls-cert-file or %s", keySrc, envTLSCrt)
	}
	c.tls = cfg
	return c, nil
}

// options returns the client options the flags describe.
func (t *temporalFlags) options(log *slog.Logger) (client.Options, connection, error) {
	conn, err := t.resolve(log)
	if err != nil {
		return client.Options{}, conn, fmt.Errorf("configuring the connection to Temporal: %w", err)
	}
	opts := client.Options{HostPort: t.addr, Namespace: t.namespace, Logger: temporalLogger(log)}
	opts.ConnectionOptions.TLS = conn.tls
	if conn.apiKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(conn.apiKey)
	}
	return opts, conn, nil
}

// dial connects to Temporal as the flags say, the SDK logging to log; the
// options are returned for clients derived from this one
// (client.NewClientFromExisting needs them).
func (t *temporalFlags) dial(ctx context.Context, log *slog.Logger) (client.Client, client.Options, error) {
	opts, conn, err := t.options(log)
	if err != nil {
		return nil, opts, err
	}
	return t.connect(ctx, opts, conn)
}

// dialQuiet is dial for commands whose output is a report (ingest,
// events): the SDK's logs are dropped, warnings about the configuration
// go to stderr. Commands reach it through withClient, which also closes
// the client.
func (t *temporalFlags) dialQuiet(ctx context.Context) (client.Client, error) {
	opts, conn, err := t.options(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return nil, err
	}
	opts.Logger = temporalLogger(discardLogger())
	tc, _, err := t.connect(ctx, opts, conn)
	return tc, err
}

// dialLazy is dialQuiet for a server that must start while Temporal is
// unreachable (sluice status): the client connects on its first call.
func (t *temporalFlags) dialLazy() (client.Client, error) {
	opts, conn, err := t.options(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return nil, err
	}
	opts.Logger = temporalLogger(discardLogger())
	tc, err := client.NewLazyClient(opts)
	if err != nil {
		return nil, fmt.Errorf("connecting to Temporal at %s (%s): %w", t.addr, conn.describe(), err)
	}
	return tc, nil
}

func (t *temporalFlags) connect(ctx context.Context, opts client.Options, conn connection) (client.Client, client.Options, error) {
	tc, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, opts, fmt.Errorf("connecting to Temporal at %s (%s): %w", t.addr, conn.describe(), err)
	}
	return tc, opts, nil
}

// describe says how the connection is secured, never with what.
func (c connection) describe() string {
	var parts []string
	switch {
	case c.tls == nil:
		parts = append(parts, "plaintext")
	case c.mutual:
		parts = append(parts, "mutual TLS")
	default:
		parts = append(parts, "TLS")
	}
	if c.apiKey != "" {
		parts = append(parts, "API key")
	}
	return strings.Join(parts, ", ")
}
