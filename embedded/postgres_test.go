package embedded

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/sluicehq/sluice/internal/pgtest"
)

// lockedBuffer collects log output from the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startPostgres starts a node on dbURL, logging at info level into logs
// (and the test's log), and stops it when tb ends.
func startPostgres(tb testing.TB, dbURL string, logs *lockedBuffer) *Server {
	tb.Helper()
	h := slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{
		DatabaseURL:  dbURL,
		FrontendAddr: "127.0.0.1:0",
		UIAddr:       UIOff,
		LogLevel:     "info",
		Logger:       slog.New(h),
	})
	if err != nil {
		tb.Fatalf("Start on PostgreSQL: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("Stop: %v", err)
		}
	})
	return s
}

// TestPostgresPersistsAndQueriesBackfillAttributes runs one node on
// PostgreSQL (a role with a password): a workflow runs with the backfill's
// search attributes, SQL visibility finds it by them, and after a restart
// (which finds the schemas set up and leaves them so) the workflow is still
// there. The password shows in no log line, error or description.
func TestPostgresPersistsAndQueriesBackfillAttributes(t *testing.T) {
	dbURL, password := pgtest.OwnedDatabase(t)
	logs := &lockedBuffer{}
	const taskQueue = "sluice-pg-test"
	const workflowID = "pg-greeting-1"

	first := startPostgres(t, dbURL, logs)
	if strings.Contains(first.Database(), password) || !strings.Contains(first.Database(), "sluice_test_") {
		t.Errorf("Database() = %q: want the URL without its password", first.Database())
	}
	c := dial(t, first)
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(greetingWorkflow)
	w.RegisterActivity(greet)
	if err := w.Start(); err != nil {
		t.Fatalf("starting worker: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	state := temporal.NewSearchAttributeKeyKeyword("SluiceBackfillState")
	percent := temporal.NewSearchAttributeKeyInt64("SluiceBackfillPercent")
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflowID, TaskQueue: taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(state.ValueSet("running"), percent.ValueSet(42)),
	}, greetingWorkflow, "postgres")
	if err != nil {
		t.Fatalf("starting workflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "hello postgres" {
		t.Fatalf("workflow result = %q, %v; want hello postgres", got, err)
	}
	// Visibility is written after the fact: poll until the query finds it.
	query := "SluiceBackfillState = 'running' AND SluiceBackfillPercent >= 40"
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			t.Fatalf("listing workflows by %s: %v", query, err)
		}
		if len(resp.Executions) == 1 && resp.Executions[0].GetExecution().GetWorkflowId() == workflowID {
			break
		}
		if len(resp.Executions) > 1 {
			t.Fatalf("query %s found %d workflows, want 1", query, len(resp.Executions))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("query %s never found %s: %v", query, workflowID, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	w.Stop()
	if err := first.Stop(); err != nil {
		t.Fatalf("stopping first node: %v", err)
	}
	// A stopped node leaves no membership rows behind: the next node's
	// ringpop would be seeded with its closed ports (and, restarted
	// within Temporal's 20 s heartbeat cutoff, joined nothing for 30 s a
	// try; CI saw "failed to start ringpop").
	if n := countMembers(t, dbURL); n != 0 {
		t.Errorf("after Stop, %d membership rows remain; want 0", n)
	}

	second := startPostgres(t, dbURL, logs)
	c2 := dial(t, second)
	desc, err := c2.DescribeWorkflowExecution(ctx, workflowID, run.GetRunID())
	if err != nil {
		t.Fatalf("describing workflow after restart: %v", err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("status after restart = %v, want COMPLETED", st)
	}
	ns, err := c2.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: second.Namespace()})
	if err != nil {
		t.Fatalf("describing namespace: %v", err)
	}
	if got := ns.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != DefaultRetention {
		t.Errorf("namespace retention = %v, want %v", got, DefaultRetention)
	}

	// Each schema is at the embedded version, set up once.
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{pgMainSchema, pgVisibilitySchema} {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+s+".schema_update_history WHERE description = 'initial version'").Scan(&n); err != nil {
			t.Fatalf("reading %s's update history: %v", s, err)
		}
		if n != 1 {
			t.Errorf("schema %s was set up %d times, want once", s, n)
		}
	}

	out := logs.String()
	if !strings.Contains(out, "embedded Temporal server started") {
		t.Errorf("logs lack the start line: %.2000s", out)
	}
	if strings.Contains(out, password) {
		i := strings.Index(out, password)
		t.Errorf("the password shows in the logs: …%s…", out[max(0, i-300):i])
	}
}

// TestPostgresURLErrorsHideThePassword: a bad URL or an unreachable
// server is reported with the URL redacted.
func TestPostgresURLErrorsHideThePassword(t *testing.T) {
	const secret = "s3cr3t-pw"
	for _, u := range []string{
		"mysql://sluice:" + secret + "@127.0.0.1/temporal",
		"postgres://sluice:" + secret + "@127.0.0.1:5432/",
		"postgres://sluice:" + secret + "@127.0.0.1:5432/temporal?search_path=x",
		"postgres://sluice:" + secret + "@127.0.0.1:1/temporal?connect_timeout=2",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, err := Start(ctx, Options{DatabaseURL: u, FrontendAddr: "127.0.0.1:0", UIAddr: UIOff})
		cancel()
		if err == nil {
			_ = s.Stop()
			t.Errorf("Start(%s) succeeded", redactForTest(u, secret))
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error shows the password: %v", err)
		}
		if !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("error does not name the server: %v", err)
		}
	}
}

func redactForTest(s, secret string) string { return strings.ReplaceAll(s, secret, "***") }

// TestFatalWhileStoppingEndsOnlyItsGoroutine: a service still starting
// when Stop came reports its cancelled join as fatal; once the server is
// stopping that ends the goroutine instead of panicking the process (the
// race-built test binary died so after its tests had passed). Before,
// Fatal still panics.
func TestFatalWhileStoppingEndsOnlyItsGoroutine(t *testing.T) {
	stopped := new(atomic.Bool)
	l := serverLogger{log: slog.New(slog.NewTextHandler(io.Discard, nil)), stopped: stopped}
	run := func() (panicked bool) {
		done := make(chan bool)
		go func() {
			defer func() { done <- recover() != nil }()
			l.With().Fatal("failed to start ringpop")
		}()
		return <-done
	}
	if !run() {
		t.Error("Fatal before Stop did not panic")
	}
	stopped.Store(true)
	if run() {
		t.Error("Fatal while stopping panicked")
	}
}

// countMembers returns the number of rows of the cluster's membership
// table in the database at dbURL.
func countMembers(t *testing.T, dbURL string) int {
	t.Helper()
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM " + pgMainSchema + ".cluster_membership").Scan(&n); err != nil {
		t.Fatalf("counting membership rows: %v", err)
	}
	return n
}

// TestForgetDeadMembers: of two membership rows with fresh heartbeats,
// the one whose port refuses connections is deleted and the one whose
// port listens is kept.
func TestForgetDeadMembers(t *testing.T) {
	dbURL, _ := pgtest.OwnedDatabase(t)
	p, err := parsePostgres(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logger := serverLogger{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := p.prepare(ctx, logger, "default", DefaultRetention); err != nil {
		t.Fatalf("preparing: %v", err)
	}
	// Membership ports are below 32768 (a smallint column).
	livePort, err := freeLowPort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	live, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(livePort)))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	deadPort, err := freeLowPort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, port := range []int{deadPort, livePort} {
		if _, err := db.ExecContext(ctx, "INSERT INTO "+pgMainSchema+".cluster_membership (membership_partition, host_id, rpc_address, rpc_port, role, session_start, last_heartbeat, record_expiry) VALUES (0, $1, '127.0.0.1', $2, 1, now(), now(), now() + interval '1 day')",
			[]byte{byte(i + 1)}, port); err != nil {
			t.Fatalf("inserting member: %v", err)
		}
	}
	n, err := p.forgetDeadMembers(ctx)
	if err != nil {
		t.Fatalf("forgetDeadMembers: %v", err)
	}
	if n != 1 {
		t.Errorf("deleted %d rows, want 1", n)
	}
	var ports []int
	rows, err := db.QueryContext(ctx, "SELECT rpc_port FROM "+pgMainSchema+".cluster_membership")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var port int
		if err := rows.Scan(&port); err != nil {
			t.Fatal(err)
		}
		ports = append(ports, port)
	}
	rows.Close()
	if len(ports) != 1 || ports[0] != livePort {
		t.Errorf("rows left: ports %v; want only the listening %d (the refused %d deleted)", ports, livePort, deadPort)
	}
}
