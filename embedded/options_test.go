package embedded

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testcerts"
)

func TestResolveDefaults(t *testing.T) {
	r, err := Options{DataDir: t.TempDir()}.resolve()
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	if r.frontendHost != "127.0.0.1" || r.frontendPort != 7233 {
		t.Errorf("frontend = %s:%d, want 127.0.0.1:7233", r.frontendHost, r.frontendPort)
	}
	if !r.uiEnabled || r.uiHost != "127.0.0.1" || r.uiPort != 8233 {
		t.Errorf("ui = %v %s:%d, want on at 127.0.0.1:8233", r.uiEnabled, r.uiHost, r.uiPort)
	}
	if r.namespace != "default" || r.retention != 72*time.Hour {
		t.Errorf("namespace %q retention %v, want default 72h", r.namespace, r.retention)
	}
	if r.level != slog.LevelWarn {
		t.Errorf("level %v, want warn", r.level)
	}
	if !strings.HasSuffix(r.dbPath, "/temporal.db") {
		t.Errorf("dbPath %q, want it to end in /temporal.db", r.dbPath)
	}
}

func TestResolveChoices(t *testing.T) {
	r, err := Options{
		DataDir:      t.TempDir(),
		FrontendAddr: "localhost:0",
		UIAddr:       UIOff,
		Namespace:    "sluice-dev.1",
		LogLevel:     "debug",
		Retention:    240 * time.Hour,
	}.resolve()
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	if r.frontendHost != "127.0.0.1" || r.frontendPort != 0 {
		t.Errorf("frontend = %s:%d, want 127.0.0.1:0", r.frontendHost, r.frontendPort)
	}
	if r.uiEnabled {
		t.Error("UI enabled with UIAddr off")
	}
	if r.namespace != "sluice-dev.1" || r.level != slog.LevelDebug || r.retention != 240*time.Hour {
		t.Errorf("got namespace %q level %v retention %v", r.namespace, r.level, r.retention)
	}
}

func TestResolveRejects(t *testing.T) {
	dir := t.TempDir()
	const pgURL = "postgres://sluice:pw@127.0.0.1:5432/temporal"
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"no data dir", Options{}, "DataDir is required"},
		{"query char in dir", Options{DataDir: dir + "/a?b"}, "must not contain"},
		{"no port", Options{DataDir: dir, FrontendAddr: "127.0.0.1"}, "FrontendAddr"},
		{"host name", Options{DataDir: dir, FrontendAddr: "example.com:7233"}, "IP address"},
		{"port range", Options{DataDir: dir, UIAddr: "127.0.0.1:70000"}, "UIAddr"},
		{"port text", Options{DataDir: dir, UIAddr: "127.0.0.1:http"}, "UIAddr"},
		{"namespace char", Options{DataDir: dir, Namespace: "a b"}, "Namespace"},
		{"namespace start", Options{DataDir: dir, Namespace: "-a"}, "Namespace"},
		{"namespace length", Options{DataDir: dir, Namespace: strings.Repeat("a", 256)}, "255"},
		{"log level", Options{DataDir: dir, LogLevel: "loud"}, "LogLevel"},
		{"retention", Options{DataDir: dir, Retention: time.Hour}, "Retention"},
		{"node addr without postgres", Options{DataDir: dir, NodeAddr: "127.0.0.1"}, "needs DatabaseURL"},
		{"node ports without postgres", Options{DataDir: dir, NodePorts: 7300}, "needs DatabaseURL"},
		{"database scheme", Options{DatabaseURL: "mysql://u:pw@db/t"}, "want postgres"},
		{"database name", Options{DatabaseURL: "postgres://u:pw@db:5432"}, "HOST:PORT/DATABASE"},
		{"database search path", Options{DatabaseURL: "postgres://u@db/t?search_path=x"}, "search_path"},
		{"node addr differs", Options{DatabaseURL: pgURL, NodeAddr: "127.0.0.2"}, "differs from the frontend's host"},
		{"node addr name", Options{DatabaseURL: pgURL, NodeAddr: "node-a"}, "NodeAddr"},
		{"all addresses, no node", Options{DatabaseURL: pgURL, FrontendAddr: "0.0.0.0:7233", AllowInsecureRemote: true}, "set NodeAddr"},
		{"node ports range", Options{DatabaseURL: pgURL, NodePorts: 32761}, "smallint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.opts.resolve()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("resolve error = %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestDynamicConfigOverrides(t *testing.T) {
	dc := dynamicConfigClient(map[string]any{
		"matching.numTaskqueueReadPartitions": 4,
		"custom.key":                          true,
	})
	get := func(k string) any {
		for key, v := range dc {
			if key.String() == strings.ToLower(k) {
				return v
			}
		}
		return nil
	}
	if got := get("matching.numTaskqueueReadPartitions"); got != 4 {
		t.Errorf("overridden read partitions = %v, want 4", got)
	}
	if got := get("matching.numTaskqueueWritePartitions"); got != 1 {
		t.Errorf("default write partitions = %v, want 1", got)
	}
	if got := get("custom.key"); got != true {
		t.Errorf("extra key = %v, want true", got)
	}
}

// TestDynamicConfigEnablesWorkerVersioning: the embedded server turns on
// what Sluice's deploys rely on (docs/deploy.md) explicitly, whatever the
// server's defaults become.
func TestDynamicConfigEnablesWorkerVersioning(t *testing.T) {
	dc := dynamicConfigClient(nil)
	for _, k := range []string{"system.enableDeploymentVersions", "frontend.workerVersioningWorkflowAPIs", "system.enableSendTargetVersionChanged"} {
		found := false
		for key, v := range dc {
			if key.String() == strings.ToLower(k) {
				found = true
				if v != true {
					t.Errorf("%s = %v, want true", k, v)
				}
			}
		}
		if !found {
			t.Errorf("%s is not set", k)
		}
	}
}

func TestFreePortIsBindable(t *testing.T) {
	p, err := freePort("127.0.0.1")
	if err != nil {
		t.Fatalf("freePort: %v", err)
	}
	if p <= 0 || p > 65535 {
		t.Fatalf("freePort = %d", p)
	}
	if got, err := resolvePort("127.0.0.1", p); err != nil || got != p {
		t.Fatalf("resolvePort(%d) = %d, %v; want the port back", p, got, err)
	}
}

// TestResolveRefusesInsecureRemote: the frontend off loopback needs mutual
// TLS and the Web UI (no authentication) loopback, unless
// AllowInsecureRemote forces them; checked before anything binds.
func TestResolveRefusesInsecureRemote(t *testing.T) {
	dir := t.TempDir()
	certs, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	serverTLS := &TLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, CAFile: certs.CA}
	mutualTLS := &TLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, CAFile: certs.CA, ClientCAFile: certs.CA,
		ClientCertFile: certs.ClientCert, ClientKeyFile: certs.ClientKey}
	for _, c := range []struct {
		name string
		opts Options
		want string // "" accepted
	}{
		{"frontend on every interface", Options{DataDir: dir, FrontendAddr: "0.0.0.0:7233", UIAddr: UIOff}, `FrontendAddr "0.0.0.0:7233"`},
		{"frontend on an address", Options{DataDir: dir, FrontendAddr: "192.0.2.1:7233", UIAddr: UIOff}, "AllowInsecureRemote"},
		{"frontend with server TLS only", Options{DataDir: dir, FrontendAddr: "[::]:7233", UIAddr: UIOff, TLS: serverTLS}, "mutual TLS"},
		{"ui on every interface", Options{DataDir: dir, UIAddr: "0.0.0.0:8233"}, `UIAddr "0.0.0.0:8233"`},
		{"ui despite mutual TLS", Options{DataDir: dir, FrontendAddr: "0.0.0.0:7233", UIAddr: "0.0.0.0:8233", TLS: mutualTLS}, "UIAddr"},
		{"frontend with mutual TLS", Options{DataDir: dir, FrontendAddr: "0.0.0.0:7233", UIAddr: UIOff, TLS: mutualTLS}, ""},
		{"forced", Options{DataDir: dir, FrontendAddr: "0.0.0.0:7233", UIAddr: "0.0.0.0:8233", AllowInsecureRemote: true}, ""},
		{"loopback", Options{DataDir: dir, FrontendAddr: "[::1]:0", UIAddr: "localhost:0"}, ""},
		// A cluster node's internal services take no TLS at all.
		{"node off loopback despite mutual TLS", Options{DatabaseURL: "postgres://u@db/t", FrontendAddr: "0.0.0.0:7233", NodeAddr: "192.0.2.1", UIAddr: UIOff, TLS: mutualTLS}, "NodeAddr 192.0.2.1 is not loopback"},
		{"node off loopback forced", Options{DatabaseURL: "postgres://u@db/t", FrontendAddr: "0.0.0.0:7233", NodeAddr: "192.0.2.1", UIAddr: UIOff, AllowInsecureRemote: true}, ""},
	} {
		_, err := c.opts.resolve()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestResolvePostgres: a PostgreSQL node needs no data directory, keeps
// the URL's parameters, advertises the frontend's host by default, and
// never shows the password.
func TestResolvePostgres(t *testing.T) {
	r, err := Options{DatabaseURL: "postgres://sluice:s3cret@db.internal/temporal?sslmode=require", NodePorts: 7300}.resolve()
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	if r.pg == nil || r.nodeHost != "127.0.0.1" || r.nodePorts != 7300 || r.dataDir != "" {
		t.Fatalf("resolved %+v", r)
	}
	c := r.pg.storeConfig(pgVisibilitySchema)
	if c.ConnectAddr != "db.internal:5432" || c.DatabaseName != "temporal" || c.User != "sluice" || c.Password != "s3cret" ||
		c.ConnectAttributes["sslmode"] != "require" || c.ConnectAttributes["search_path"] != pgVisibilitySchema {
		t.Errorf("visibility store config %+v", c)
	}
	if strings.Contains(r.pg.redacted, "s3cret") || !strings.Contains(r.pg.redacted, "db.internal") {
		t.Errorf("redacted URL %q", r.pg.redacted)
	}
	r, err = Options{DatabaseURL: "postgres://u@db/t", FrontendAddr: "0.0.0.0:7233", NodeAddr: "10.1.2.3", AllowInsecureRemote: true}.resolve()
	if err != nil || r.nodeHost != "10.1.2.3" {
		t.Errorf("node on all addresses: %q, %v", r.nodeHost, err)
	}
	if _, err := (Options{DatabaseURL: "postgres://u:s3cret@db/t?x=1&x=2"}).resolve(); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("repeated parameter: %v", err)
	}
}
