package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Defaults applied by Start to zero-valued Options fields.
const (
	// DefaultFrontendAddr is the frontend gRPC address, as `temporal server
	// start-dev` uses.
	DefaultFrontendAddr = "127.0.0.1:7233"
	// DefaultUIAddr is the Web UI address, as `temporal server start-dev` uses.
	DefaultUIAddr = "127.0.0.1:8233"
	// DefaultNamespace is the namespace created and reported when
	// Options.Namespace is empty.
	DefaultNamespace = "default"
	// DefaultRetention is the workflow history retention of a namespace that
	// Start creates.
	DefaultRetention = 72 * time.Hour
	// DefaultLogLevel is the level of the server's own logs. The server logs a
	// lot at info level, so only warnings and errors pass by default.
	DefaultLogLevel = "warn"
	// UIOff as Options.UIAddr runs no Web UI.
	UIOff = "off"
)

// databaseFile is the SQLite file name inside Options.DataDir.
const databaseFile = "temporal.db"

// Options configures the embedded Temporal server. The zero value of every
// field but DataDir selects a default.
type Options struct {
	// DataDir is the directory holding the SQLite database (temporal.db). It
	// is created if missing. Required unless DatabaseURL is set.
	DataDir string
	// DatabaseURL, when set, keeps Temporal's persistence and SQL
	// visibility in PostgreSQL instead of SQLite:
	// postgres://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=…, the database
	// existing and owned by USER. Start creates or upgrades Temporal's
	// tables in its schemas "temporal" and "temporal_visibility" (as
	// temporal-sql-tool would) and the namespace, under a lock that lets
	// several nodes start at once. Every server started on the same
	// database joins one cluster. The password is never shown.
	DatabaseURL string
	// NodeAddr is the IP address a cluster node's internal services
	// (history, matching, worker and the membership gossip) listen on and
	// advertise to the other nodes; default the frontend's host, which
	// must then be an address the other nodes reach. The frontend's host
	// must be NodeAddr or unspecified (0.0.0.0). Only with DatabaseURL.
	NodeAddr string
	// NodePorts is the first of 8 consecutive ports the node's internal
	// services use (the frontend's HTTP API, history, matching, worker,
	// then their membership ports), for firewalls between nodes; at most
	// 32760, as Temporal's PostgreSQL schema keeps membership ports in a
	// smallint. 0 picks free ports from 20000 to 32767. Only with
	// DatabaseURL.
	NodePorts int
	// FrontendAddr is the host:port the frontend gRPC service listens on;
	// default DefaultFrontendAddr. The host must be an IP address or
	// "localhost" (read as 127.0.0.1); port 0 picks a free port.
	FrontendAddr string
	// UIAddr is the host:port the Web UI listens on; default DefaultUIAddr.
	// Port 0 picks a free port; UIOff ("off") runs no UI.
	UIAddr string
	// Namespace is the namespace workers and clients use; default
	// DefaultNamespace. It is created at start if the database lacks it.
	Namespace string
	// Retention is the workflow history retention given to Namespace when
	// Start creates it; default DefaultRetention. An existing namespace keeps
	// its retention.
	Retention time.Duration
	// LogLevel is the minimum level of server logs passed to Logger: "debug",
	// "info", "warn" or "error"; default DefaultLogLevel. At "warn" and
	// "error", Stop passes only errors, as the server logs routine warnings
	// while it shuts down.
	LogLevel string
	// Logger receives the server's logs; default slog.Default().
	Logger *slog.Logger
	// TLS, when set, serves the frontend over TLS (mutual TLS with
	// TLS.ClientCAFile).
	TLS *TLS
	// AllowInsecureRemote lets the frontend listen off loopback without
	// mutual TLS, and the Web UI (which has no authentication) listen off
	// loopback at all. Without it those are refused: anyone who reaches
	// them could read payloads and terminate workflows.
	AllowInsecureRemote bool
	// CodecEndpoint, when set, is the remote codec endpoint the Web UI
	// sends payloads to for decoding (such as http://127.0.0.1:8234, a
	// `sluice codec serve`); the UI calls it from the browser.
	CodecEndpoint string
	// DynamicConfig sets extra Temporal dynamic config values (key to value,
	// for every namespace and task queue), overriding this package's
	// defaults. Values must have the types the server expects: int (not
	// int64), float64, bool, string or time.Duration.
	DynamicConfig map[string]any
}

// resolved is Options after defaults and validation.
type resolved struct {
	dataDir      string
	dbPath       string
	frontendHost string
	frontendPort int
	uiEnabled    bool
	uiHost       string
	uiPort       int
	namespace    string
	retention    time.Duration
	level        slog.Level
	logger       *slog.Logger
	dynamic      map[string]any
	tls          *TLS
	codec        string
	pg           *postgres // nil: SQLite
	nodeHost     string
	nodePorts    int
}

// resolve applies defaults to o and checks every field.
func (o Options) resolve() (resolved, error) {
	var r resolved
	var err error
	if o.DatabaseURL != "" {
		if r.pg, err = parsePostgres(o.DatabaseURL); err != nil {
			return r, fmt.Errorf("embedded options: %w", err)
		}
	}
	if err := r.resolveDataDir(o.DataDir); err != nil {
		return r, err
	}

	addr := o.FrontendAddr
	if addr == "" {
		addr = DefaultFrontendAddr
	}
	if r.frontendHost, r.frontendPort, err = parseAddr(addr); err != nil {
		return r, fmt.Errorf("embedded options: FrontendAddr: %w", err)
	}
	if err := r.resolveNode(o); err != nil {
		return r, err
	}
	err = r.resolveRest(o, addr)
	return r, err
}

// resolveDataDir checks the data directory, required with SQLite.
func (r *resolved) resolveDataDir(dataDir string) error {
	if dataDir == "" {
		if r.pg != nil {
			return nil
		}
		return errors.New("embedded options: DataDir is required")
	}
	o := Options{DataDir: dataDir}
	dir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return fmt.Errorf("embedded options: resolving DataDir %q: %w", o.DataDir, err)
	}
	// The database path becomes a SQLite URI (file:PATH?params), where these
	// characters would end the path.
	if strings.ContainsAny(dir, "?#") {
		return fmt.Errorf("embedded options: DataDir %q must not contain '?' or '#'", o.DataDir)
	}
	r.dataDir = dir
	r.dbPath = filepath.Join(dir, databaseFile)
	return nil
}

// resolveNode checks NodeAddr and NodePorts against the frontend's host.
func (r *resolved) resolveNode(o Options) error {
	r.nodeHost = r.frontendHost
	if r.pg == nil {
		if o.NodeAddr != "" {
			return fmt.Errorf("embedded options: NodeAddr %q %w", o.NodeAddr, errNoPostgres)
		}
		if o.NodePorts != 0 {
			return fmt.Errorf("embedded options: NodePorts %d %w", o.NodePorts, errNoPostgres)
		}
		return nil
	}
	front := net.ParseIP(r.frontendHost)
	if o.NodeAddr != "" {
		host := o.NodeAddr
		if host == "localhost" {
			host = "127.0.0.1"
		}
		ip := net.ParseIP(host)
		if ip == nil || ip.IsUnspecified() {
			return fmt.Errorf("embedded options: NodeAddr %q: want the IP address other nodes reach this one at", o.NodeAddr)
		}
		if !front.IsUnspecified() && !front.Equal(ip) {
			return fmt.Errorf("embedded options: NodeAddr %q differs from the frontend's host %s: the frontend must listen on NodeAddr or on all addresses (0.0.0.0)", o.NodeAddr, r.frontendHost)
		}
		r.nodeHost = ip.String()
	} else if front.IsUnspecified() {
		return fmt.Errorf("embedded options: FrontendAddr %s listens on all addresses: set NodeAddr to the one other nodes reach this node at", r.frontendHost)
	}
	if o.NodePorts < 0 || o.NodePorts+clusterPorts-1 > maxMembershipPort {
		return fmt.Errorf("embedded options: NodePorts %d: want 0 (free ports) or a port from 1 to %d (Temporal's PostgreSQL schema keeps membership ports in a smallint)", o.NodePorts, maxMembershipPort-clusterPorts+1)
	}
	r.nodePorts = o.NodePorts
	return nil
}

// resolveRest resolves the fields past the frontend and the node.
func (r *resolved) resolveRest(o Options, addr string) error {
	var err error
	switch o.UIAddr {
	case UIOff:
	case "":
		r.uiEnabled = true
		r.uiHost, r.uiPort, _ = parseAddr(DefaultUIAddr)
	default:
		r.uiEnabled = true
		if r.uiHost, r.uiPort, err = parseAddr(o.UIAddr); err != nil {
			return fmt.Errorf("embedded options: UIAddr: %w", err)
		}
	}

	r.namespace = o.Namespace
	if r.namespace == "" {
		r.namespace = DefaultNamespace
	}
	if err := checkNamespace(r.namespace); err != nil {
		return fmt.Errorf("embedded options: Namespace: %w", err)
	}

	r.retention = o.Retention
	if r.retention == 0 {
		r.retention = DefaultRetention
	}
	if r.retention < 24*time.Hour {
		return fmt.Errorf("embedded options: Retention %v is below the server's minimum of 24h", o.Retention)
	}

	level := o.LogLevel
	if level == "" {
		level = DefaultLogLevel
	}
	if err := r.level.UnmarshalText([]byte(level)); err != nil {
		return fmt.Errorf("embedded options: LogLevel %q: want debug, info, warn or error", o.LogLevel)
	}

	r.logger = o.Logger
	if r.logger == nil {
		r.logger = slog.Default()
	}
	r.dynamic = maps.Clone(o.DynamicConfig)
	if o.TLS != nil {
		t := *o.TLS
		if err := t.validate(); err != nil {
			return fmt.Errorf("embedded options: %w", err)
		}
		r.tls = &t
	}
	if !o.AllowInsecureRemote {
		if ip := net.ParseIP(r.frontendHost); !ip.IsLoopback() && (r.tls == nil || r.tls.ClientCAFile == "") {
			return fmt.Errorf("embedded options: FrontendAddr %q is not loopback and the frontend has no mutual TLS (TLS.ClientCAFile): anyone reaching it could terminate workflows; set AllowInsecureRemote to force it", addr)
		}
		if ip := net.ParseIP(r.nodeHost); r.pg != nil && !ip.IsLoopback() {
			return fmt.Errorf("embedded options: NodeAddr %s is not loopback and a node's internal services take no TLS: anyone reaching them could read and change workflows; keep the nodes on a private network and set AllowInsecureRemote", r.nodeHost)
		}
		if ip := net.ParseIP(r.uiHost); r.uiEnabled && !ip.IsLoopback() {
			return fmt.Errorf("embedded options: UIAddr %q is not loopback and the Web UI has no authentication; set AllowInsecureRemote to force it", o.UIAddr)
		}
	}
	if o.CodecEndpoint != "" {
		u, err := url.Parse(o.CodecEndpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("embedded options: CodecEndpoint %q is not an http(s) URL", o.CodecEndpoint)
		}
		r.codec = strings.TrimRight(o.CodecEndpoint, "/")
	}
	return nil
}

// parseAddr splits a host:port address whose host is an IP address or
// "localhost" and whose port is 0 to 65535.
func parseAddr(addr string) (host string, port int, err error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("parsing address %q: %w", addr, err)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	if net.ParseIP(host) == nil {
		return "", 0, fmt.Errorf("address %q: host must be an IP address or localhost", addr)
	}
	port, err = strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("address %q: port must be a number from 0 to 65535", addr)
	}
	return host, port, nil
}

// checkNamespace accepts the names Temporal accepts for namespaces: letters,
// digits, '-', '_' and '.', starting with a letter or digit, at most 255
// characters.
func checkNamespace(name string) error {
	if len(name) > 255 {
		return fmt.Errorf("namespace name is %d characters long, the limit is 255", len(name))
	}
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '-' || c == '_' || c == '.'):
		default:
			return fmt.Errorf("namespace name %q: character %q at %d is not allowed", name, c, i)
		}
	}
	return nil
}
