package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofrs/flock"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/api/adminservice/v1"
	"go.temporal.io/server/temporal"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluicehq/sluice/internal/redact"
)

// Server is a running embedded Temporal server with its optional Web UI.
type Server struct {
	temporal     temporal.Server
	ui           *webUI
	lock         *flock.Flock
	level        *slog.LevelVar
	quietStop    bool
	frontendHost string
	namespace    string
	database     string
	pg           *postgres // nil on SQLite

	logger   *slog.Logger
	stopping *atomic.Bool // read by the server's logger
	stopOnce sync.Once
	stopErr  error
}

// Start prepares the SQLite database in opts.DataDir (or PostgreSQL at
// opts.DatabaseURL), starts the Temporal server and, unless disabled, the
// Web UI. It returns once the frontend answers and the namespace can be
// used, so a worker can connect at once. If ctx ends first, Start stops
// what it started and returns ctx's error. The caller must Stop the
// returned server.
func Start(ctx context.Context, opts Options) (*Server, error) {
	r, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if r.pg != nil {
		return start(ctx, r)
	}
	if err := os.MkdirAll(r.dataDir, 0o750); err != nil {
		return nil, fmt.Errorf("creating data directory %s: %w", r.dataDir, err)
	}
	lock := flock.New(r.dbPath + ".lock")
	locked, err := lock.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", lock.Path(), err)
	}
	if !locked {
		return nil, fmt.Errorf("locking %s: another process is using the Temporal database in %s", lock.Path(), r.dataDir)
	}
	s, err := start(ctx, r)
	if err != nil {
		_ = lock.Unlock()
		return nil, err
	}
	s.lock = lock
	return s, nil
}

// start does Start's work while the data directory is locked.
func start(ctx context.Context, r resolved) (*Server, error) {
	began := time.Now()
	level := new(slog.LevelVar)
	level.Set(r.level)
	var secrets []string
	if r.pg != nil {
		secrets = redact.DSNSecrets(r.pg.url)
	}
	logger := slog.New(redactHandler{secrets: secrets, next: levelHandler{level: level, next: r.logger.Handler()}}).With("component", "temporal")

	stopping := new(atomic.Bool)
	srvLog := serverLogger{log: logger, stopped: stopping}
	store := sqlitePersistence(r.dbPath, r.frontendHost)
	database := r.dbPath
	unlock := func() {}
	var err error
	if r.pg != nil {
		// The lock is held until the server is built, which writes the
		// cluster's metadata record on a first start.
		if unlock, err = r.pg.lock(ctx); err != nil {
			return nil, fmt.Errorf("preparing Temporal database: %w", err)
		}
		defer func() { unlock() }()
		if err := r.pg.prepare(ctx, srvLog, r.namespace, r.retention); err != nil {
			return nil, fmt.Errorf("preparing Temporal database: %w", err)
		}
		// A member that stopped moments ago would otherwise seed this
		// node's ringpop with ports nothing listens on.
		if n, err := r.pg.forgetDeadMembers(ctx); err != nil {
			return nil, fmt.Errorf("preparing Temporal database: %w", err)
		} else if n > 0 {
			r.logger.Info("forgot dead cluster members", "rows", n)
		}
		store = postgresPersistence(r.pg, r.nodeHost)
		database = r.pg.redacted
	} else if err := prepareDatabase(r.dbPath, r.namespace, r.retention); err != nil {
		return nil, fmt.Errorf("preparing Temporal database: %w", err)
	}
	ports, err := pickPorts(r.frontendHost, r.frontendPort, store, r.nodePorts)
	if err != nil {
		return nil, fmt.Errorf("choosing Temporal ports: %w", err)
	}
	creds := insecure.NewCredentials()
	if r.tls != nil {
		cfg, err := r.tls.clientConfig(r.frontendHost)
		if err != nil {
			return nil, fmt.Errorf("building the TLS client configuration: %w", err)
		}
		creds = credentials.NewTLS(cfg)
	}
	srv, err := temporal.NewServer(serverOptions(r.frontendHost, ports, store, srvLog, r.dynamic, r.tls)...)
	if err != nil {
		return nil, fmt.Errorf("building Temporal server: %w", err)
	}
	unlock()
	unlock = func() {}
	s := &Server{
		temporal:     srv,
		level:        level,
		quietStop:    r.level >= slog.LevelWarn,
		frontendHost: net.JoinHostPort(dialHost(r.frontendHost, r.nodeHost), strconv.Itoa(ports.frontend)),
		namespace:    r.namespace,
		database:     database,
		pg:           r.pg,
		logger:       r.logger,
		stopping:     stopping,
	}
	if err := srv.Start(); err != nil {
		stopping.Store(true)
		_ = srv.Stop()
		return nil, fmt.Errorf("starting Temporal server: %w", err)
	}
	if err := waitNamespace(ctx, s.frontendHost, r.namespace, creds); err != nil {
		_ = s.stopServers()
		return nil, err
	}
	if r.pg != nil {
		if err := waitMembership(ctx, s.frontendHost, creds); err != nil {
			_ = s.stopServers()
			return nil, err
		}
	}
	if err := registerSearchAttributes(ctx, s.frontendHost, r.namespace, creds); err != nil {
		_ = s.stopServers()
		return nil, err
	}
	if r.uiEnabled {
		if s.ui, err = startUI(ctx, r, s.frontendHost); err != nil {
			_ = s.stopServers()
			return nil, fmt.Errorf("starting Temporal Web UI: %w", err)
		}
	}
	r.logger.Info("embedded Temporal server started",
		"frontend", s.frontendHost, "tls", r.tls != nil, "ui", s.UIURL(), "namespace", r.namespace,
		"database", database, "node", r.nodeHost, "took", time.Since(began).Round(time.Millisecond))
	return s, nil
}

// dialHost is the host clients on this machine dial the frontend at: its
// own, or the node's when it listens on all addresses.
func dialHost(frontend, node string) string {
	if ip := net.ParseIP(frontend); ip != nil && ip.IsUnspecified() {
		return node
	}
	return frontend
}

// namespaceWait bounds how long Start waits for the namespace after the
// server has started, in case ctx has no deadline.
const namespaceWait = time.Minute

// waitNamespace polls the frontend until it describes namespace.
func waitNamespace(ctx context.Context, hostPort, namespace string, creds credentials.TransportCredentials) error {
	return pollFrontend(ctx, hostPort, creds, 50*time.Millisecond, fmt.Sprintf("namespace %q", namespace),
		func(ctx context.Context, conn *grpc.ClientConn) error {
			_, err := workflowservice.NewWorkflowServiceClient(conn).DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
			return err
		})
}

// waitMembership polls a cluster node's frontend until its membership
// lists a history, a matching and a worker service: until then the
// node's ringpop is still joining (past a restart, it first tries the
// stopped run's addresses), and workers polling it would be refused.
func waitMembership(ctx context.Context, hostPort string, creds credentials.TransportCredentials) error {
	return pollFrontend(ctx, hostPort, creds, 100*time.Millisecond, "the cluster membership",
		func(ctx context.Context, conn *grpc.ClientConn) error {
			resp, err := adminservice.NewAdminServiceClient(conn).DescribeCluster(ctx, &adminservice.DescribeClusterRequest{})
			if err != nil {
				return err
			}
			members := map[string]int32{}
			for _, ring := range resp.GetMembershipInfo().GetRings() {
				members[ring.GetRole()] = ring.GetMemberCount()
			}
			var missing []string
			for _, role := range []string{"history", "matching", "worker"} {
				if members[role] == 0 {
					missing = append(missing, role)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("missing %v", missing)
			}
			return nil
		})
}

// pollFrontend calls ready over one connection to the frontend at
// hostPort, every interval, until it returns nil; it gives up when ctx
// ends or namespaceWait has passed, with an error saying what it waited
// for and ready's last error. Each call has a deadline of its own: one
// call hung on a node still joining must not spend the whole wait.
func pollFrontend(ctx context.Context, hostPort string, creds credentials.TransportCredentials, interval time.Duration,
	what string, ready func(ctx context.Context, conn *grpc.ClientConn) error) error {
	ctx, cancel := context.WithTimeout(ctx, namespaceWait)
	defer cancel()
	conn, err := grpc.NewClient(hostPort, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("connecting to Temporal frontend %s: %w", hostPort, err)
	}
	defer conn.Close()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := ready(callCtx, conn)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s on Temporal frontend %s: %w (last error: %v)", what, hostPort, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// FrontendHostPort returns the host:port of the frontend gRPC service, for
// client.Options.HostPort.
func (s *Server) FrontendHostPort() string { return s.frontendHost }

// UIURL returns the Web UI's base URL, such as http://127.0.0.1:8233, or ""
// when the UI is off.
func (s *Server) UIURL() string {
	if s.ui == nil {
		return ""
	}
	return s.ui.url
}

// Database describes where the server keeps its data: the SQLite file's
// path, or the PostgreSQL URL with its password redacted.
func (s *Server) Database() string { return s.database }

// Namespace returns the namespace Start made sure exists.
func (s *Server) Namespace() string { return s.namespace }

// Stop stops the Web UI and the Temporal server and releases the data
// directory. Later calls return the first call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		if s.quietStop {
			// The server logs routine warnings while shutting down.
			s.level.Set(slog.LevelError)
		}
		began := time.Now()
		err := s.stopServers()
		s.logger.Info("embedded Temporal server stopped", "frontend", s.frontendHost,
			"took", time.Since(began).Round(time.Millisecond))
		if s.lock != nil {
			if uerr := s.lock.Unlock(); uerr != nil {
				err = errors.Join(err, fmt.Errorf("unlocking %s: %w", s.lock.Path(), uerr))
			}
		}
		s.stopErr = err
	})
	return s.stopErr
}

// stopServers stops the UI, then the Temporal server.
func (s *Server) stopServers() error {
	s.stopping.Store(true)
	if s.ui != nil {
		s.ui.stop()
	}
	if err := s.temporal.Stop(); err != nil {
		return fmt.Errorf("stopping Temporal server: %w", err)
	}
	if s.pg != nil {
		// Leave no rows of this node's now-closed ports for the next
		// node to start to seed its ringpop with (forgetDeadMembers).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := s.pg.forgetDeadMembers(ctx); err != nil {
			s.logger.Warn("could not clear this node's cluster membership", "error", err)
		}
	}
	return nil
}
