package worker_test

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/worker"
	"github.com/sluicehq/sluice/workflows"
)

// tempPrefix is how the local lake names its temporary files.
const tempPrefix = ".sluice-tmp-"

// slowAbortLake is a local lake whose writes last until they are
// cancelled, as one of a provider's slow body does, and whose writers
// take a while to abort, as an S3 writer does (AbortMultipartUpload is a
// request or three): the write a stop interrupts is gone only if the stop
// waits for it.
type slowAbortLake struct {
	*sink.Local
	aborted atomic.Int64
}

// Create implements sink.Sink.
func (l *slowAbortLake) Create(ctx context.Context, key string) (sink.Writer, error) {
	w, err := l.Local.Create(ctx, key)
	if err != nil {
		return nil, err
	}
	return &slowAbortWriter{Writer: w, lake: l, ctx: ctx}, nil
}

type slowAbortWriter struct {
	sink.Writer
	lake *slowAbortLake
	ctx  context.Context
	done bool
}

// WritePage implements sink.Writer: the page never ends before the
// write's context does.
func (w *slowAbortWriter) WritePage(body io.Reader) (sink.Page, error) {
	<-w.ctx.Done()
	return sink.Page{}, context.Cause(w.ctx)
}

// Commit implements sink.Writer.
func (w *slowAbortWriter) Commit(meta sink.Meta) (sink.Result, error) {
	w.done = true
	return w.Writer.Commit(meta)
}

// Abort implements sink.Writer, slowly.
func (w *slowAbortWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	time.Sleep(500 * time.Millisecond)
	w.Writer.Abort()
	w.lake.aborted.Add(1)
}

// temps lists the lake's temporary files.
func temps(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), tempPrefix) {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitUntil polls cond every 50 ms until it holds, failing the test
// after timeout (a bound on a hang, not a timing assertion).
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStopAbortsInFlightWrites: a worker stopped (SIGTERM in `sluice
// worker`, which calls Stop) in the middle of writing an object returns
// from Stop only once the interrupted write has aborted: no temporary
// file of it is left in the lake, however long the abort takes. And while
// it runs, the worker sweeps the temporary files a killed writer left in
// its local lake, but not the one it is writing.
func TestStopAbortsInFlightWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	lg := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := embedded.Start(ctx, embedded.Options{DataDir: t.TempDir(), FrontendAddr: "127.0.0.1:0", UIAddr: embedded.UIOff, Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })

	reg := connectortest.Registry(t)
	creds := simulator.TestCredentials(reg)
	sim, err := simulator.New(simulator.Options{Registry: reg, Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	base, err := sim.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })

	root := filepath.Join(t.TempDir(), "lake")
	local, err := sink.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	lake := &slowAbortLake{Local: local}
	tokens, err := tokenstore.NewFile(filepath.Join(t.TempDir(), "tokens"))
	if err != nil {
		t.Fatal(err)
	}
	tc, err := client.Dial(client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace(), Logger: sdklog.NewStructuredLogger(lg)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	w, err := worker.Start(worker.Options{
		Client: tc, Config: activities.Config{Registry: reg, Sink: lake, Logger: lg, TokenStore: tokens,
			BaseURLs: map[string]string{"*": base}, Credentials: connector.MapCredentials(creds)},
		Tolerance:  2 * time.Second,
		StaleSweep: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			w.Stop()
		}
	})

	// A writer killed mid-write after the worker opened the lake: its
	// temporary file, unlocked and older than sink.StaleTempAge.
	deadDir := filepath.Join(root, "provider=fred", "job=killed")
	if err := os.MkdirAll(deadDir, 0o755); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(deadDir, tempPrefix+"killed")
	if err := os.WriteFile(dead, []byte("half a zstd frame"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * sink.StaleTempAge)
	if err := os.Chtimes(dead, old, old); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, time.Minute, "the worker's sweep to remove "+dead, func() bool {
		_, err := os.Stat(dead)
		return os.IsNotExist(err)
	})

	const date = "2025-03-10"
	if _, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.DailyWorkflowID(date), TaskQueue: worker.DefaultTaskQueue},
		workflows.DailyIngestName, workflows.DailyIngestInput{Date: date, Datasets: []string{connectortest.UPBITDataset}}); err != nil {
		t.Fatal(err)
	}
	var writing []string
	waitUntil(t, 2*time.Minute, "the UPBIT ingest to start writing", func() bool {
		writing = temps(t, root)
		return len(writing) > 0
	})
	// The sweep runs all along; the live writer's file is older than
	// nothing but locked, so it stays whatever its age.
	old = time.Now().Add(-2 * sink.StaleTempAge)
	for _, p := range writing {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // a few sweeps
	if got := temps(t, root); len(got) != len(writing) {
		t.Fatalf("the sweep removed a live writer's temporary file: %v, then %v", writing, got)
	}

	w.Stop()
	stopped = true
	if left := temps(t, root); len(left) > 0 {
		t.Errorf("the stopped worker left %v in the lake (writing %v at the stop; %d writes aborted)", left, writing, lake.aborted.Load())
	}
	if lake.aborted.Load() == 0 {
		t.Errorf("Stop returned before the interrupted write aborted")
	}
}
