package embedded

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// testLogWriter forwards log lines to t.Log until the test's cleanup closes
// it; the server's goroutines may still log after the test has ended.
type testLogWriter struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// testLogger returns a logger writing to tb's log while tb runs.
func testLogger(tb testing.TB) *slog.Logger {
	w := &testLogWriter{t: tb}
	tb.Cleanup(func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// startServer starts an embedded server on free ports in dataDir and stops
// it when tb ends.
func startServer(tb testing.TB, dataDir string, ui bool) *Server {
	tb.Helper()
	opts := Options{
		DataDir:      dataDir,
		FrontendAddr: "127.0.0.1:0",
		UIAddr:       "127.0.0.1:0",
		Logger:       testLogger(tb),
	}
	if !ui {
		opts.UIAddr = UIOff
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx, opts)
	if err != nil {
		tb.Fatalf("Start: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("Stop: %v", err)
		}
	})
	return s
}

// dial connects an SDK client to s and closes it when tb ends.
func dial(tb testing.TB, s *Server) client.Client {
	tb.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  s.FrontendHostPort(),
		Namespace: s.Namespace(),
		Logger:    sdklog.NewStructuredLogger(testLogger(tb)),
	})
	if err != nil {
		tb.Fatalf("dialing %s: %v", s.FrontendHostPort(), err)
	}
	tb.Cleanup(c.Close)
	return c
}

func greet(_ context.Context, name string) (string, error) {
	return "hello " + name, nil
}

func greetingWorkflow(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var out string
	err := workflow.ExecuteActivity(ctx, greet, name).Get(ctx, &out)
	return out, err
}

// TestWorkflowRunsAndHistorySurvivesRestart runs a workflow with an activity
// on the embedded server, restarts the server on the same data directory and
// reads the workflow's history back.
func TestWorkflowRunsAndHistorySurvivesRestart(t *testing.T) {
	dataDir := t.TempDir()
	const taskQueue = "sluice-embedded-test"
	const workflowID = "greeting-1"

	first := startServer(t, dataDir, false)
	if first.UIURL() != "" {
		t.Errorf("UIURL with the UI off = %q, want empty", first.UIURL())
	}
	if first.Namespace() != DefaultNamespace {
		t.Errorf("Namespace() = %q, want %q", first.Namespace(), DefaultNamespace)
	}

	// A second server on the same data directory must be refused.
	if s, err := Start(context.Background(), Options{DataDir: dataDir, FrontendAddr: "127.0.0.1:0", UIAddr: UIOff}); err == nil {
		_ = s.Stop()
		t.Fatal("second Start on the same DataDir succeeded, want a lock error")
	} else if !strings.Contains(err.Error(), "another process") {
		t.Errorf("second Start error = %v, want it to say another process uses the database", err)
	}

	c := dial(t, first)
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(greetingWorkflow)
	w.RegisterActivity(greet)
	if err := w.Start(); err != nil {
		t.Fatalf("starting worker: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflowID, TaskQueue: taskQueue}, greetingWorkflow, "sluice")
	if err != nil {
		t.Fatalf("starting workflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatalf("workflow result: %v", err)
	}
	if got != "hello sluice" {
		t.Fatalf("workflow result = %q, want %q", got, "hello sluice")
	}
	runID := run.GetRunID()
	w.Stop()
	c.Close()
	if err := first.Stop(); err != nil {
		t.Fatalf("stopping first server: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "temporal.db")); err != nil {
		t.Fatalf("database file: %v", err)
	}

	second := startServer(t, dataDir, false)
	c2 := dial(t, second)
	desc, err := c2.DescribeWorkflowExecution(ctx, workflowID, runID)
	if err != nil {
		t.Fatalf("describing workflow after restart: %v", err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("status after restart = %v, want COMPLETED", st)
	}
	var types []enumspb.EventType
	iter := c2.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatalf("reading history after restart: %v", err)
		}
		types = append(types, ev.GetEventType())
	}
	want := map[enumspb.EventType]bool{
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:   false,
		enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:      false,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: false,
	}
	for _, ty := range types {
		if _, ok := want[ty]; ok {
			want[ty] = true
		}
	}
	for ty, seen := range want {
		if !seen {
			t.Errorf("history after restart lacks %v; events: %v", ty, types)
		}
	}

	// The namespace keeps the retention it was created with.
	ns, err := c2.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: second.Namespace()})
	if err != nil {
		t.Fatalf("describing namespace: %v", err)
	}
	if got := ns.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != DefaultRetention {
		t.Errorf("namespace retention = %v, want %v", got, DefaultRetention)
	}
}

// TestWebUI checks the UI serves its page and proxies the Temporal API.
func TestWebUI(t *testing.T) {
	s := startServer(t, t.TempDir(), true)
	if !strings.HasPrefix(s.UIURL(), "http://127.0.0.1:") {
		t.Fatalf("UIURL() = %q, want http://127.0.0.1:<port>", s.UIURL())
	}
	httpClient := &http.Client{Timeout: 30 * time.Second}

	resp, err := httpClient.Get(s.UIURL() + "/")
	if err != nil {
		t.Fatalf("GET /: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d, want 200", resp.StatusCode)
	}
	if !strings.Contains(strings.ToLower(string(body)), "<html") {
		t.Errorf("GET / body is not an HTML page: %.200q", body)
	}

	resp, err = httpClient.Get(s.UIURL() + "/api/v1/namespaces")
	if err != nil {
		t.Fatalf("GET /api/v1/namespaces: %v", err)
	}
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/namespaces = %d, want 200; body %.300q", resp.StatusCode, body)
	}
	var list struct {
		Namespaces []struct {
			NamespaceInfo struct {
				Name string `json:"name"`
			} `json:"namespaceInfo"`
		} `json:"namespaces"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("decoding /api/v1/namespaces: %v; body %.300q", err, body)
	}
	var names []string
	for _, ns := range list.Namespaces {
		names = append(names, ns.NamespaceInfo.Name)
	}
	found := false
	for _, n := range names {
		found = found || n == s.Namespace()
	}
	if !found {
		t.Errorf("/api/v1/namespaces lists %v, want it to include %q", names, s.Namespace())
	}
}
