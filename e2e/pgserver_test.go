//go:build linux

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/api/adminservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/internal/pgtest"
)

// pgNode is one `sluice server --temporal-db` process.
type pgNode struct {
	name     string
	cmd      *exec.Cmd
	frontend string
	logPath  string // stdout and stderr
	done     chan struct{}
}

// startPGNode starts a node on dbURL and returns once it printed its
// frontend address (the namespace answers by then). The node is stopped
// when t ends. Safe to call from several goroutines.
func startPGNode(t *testing.T, name, dbURL string) (*pgNode, error) {
	dir, err := os.MkdirTemp("", "sluice-"+name+"-")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	n := &pgNode{name: name, logPath: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logFile, err := os.Create(n.logPath)
	if err != nil {
		return nil, err
	}
	n.cmd = exec.Command(sluiceBin, "server", "--data-dir", dir, "--frontend-addr", "127.0.0.1:0",
		"--ui-addr", "off", "--temporal-log-level", "info")
	// The URL, password and all, goes by the environment, as a real
	// deployment passes it (a flag would show in ps).
	n.cmd.Env = append(cleanEnv(), "SLUICE_TEMPORAL_DB="+dbURL)
	n.cmd.Stderr = logFile
	stdout, err := n.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			fmt.Fprintln(logFile, "stdout: "+sc.Text())
			if f := strings.Fields(sc.Text()); !sent && len(f) >= 2 && f[0] == "Temporal" {
				addr <- f[1]
				sent = true
			}
		}
		_ = n.cmd.Wait()
		logFile.Close()
		close(n.done)
		if !sent {
			close(addr)
		}
	}()
	t.Cleanup(func() {
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.done:
		case <-time.After(30 * time.Second):
			_ = n.cmd.Process.Kill()
			<-n.done
		}
	})
	select {
	case a, ok := <-addr:
		if !ok {
			b, _ := os.ReadFile(n.logPath)
			return nil, fmt.Errorf("%s exited before it was up:\n%s", name, b)
		}
		n.frontend = a
	case <-time.After(4 * time.Minute):
		b, _ := os.ReadFile(n.logPath)
		return nil, fmt.Errorf("%s did not come up within 4 minutes:\n%s", name, b)
	}
	return n, nil
}

// waitSignal is the cluster test's workflow: it returns the signal's value.
func waitSignal(ctx workflow.Context) (string, error) {
	var v string
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &v)
	return v, nil
}

// TestPostgresClusterSurvivesNodeKill: two `sluice server` processes
// start at once on one empty PostgreSQL database and both come up as one
// cluster. A client on node A starts workflows (spread over the history
// shards, so some live on A); A is SIGKILLed; through node B each
// workflow is signalled and completes, with a worker that only knows B.
// The time from the kill to the last completion is logged. Neither node
// prints the database password.
func TestPostgresClusterSurvivesNodeKill(t *testing.T) {
	dbURL, password := pgtest.OwnedDatabase(t)
	if err := buildBinary(); err != nil {
		t.Fatalf("building sluice: %v", err)
	}

	var a, b *pgNode
	var errA, errB error
	var wg sync.WaitGroup
	wg.Add(2)
	began := time.Now()
	go func() { defer wg.Done(); a, errA = startPGNode(t, "node-a", dbURL) }()
	go func() { defer wg.Done(); b, errB = startPGNode(t, "node-b", dbURL) }()
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("starting two nodes at once on an empty database: A: %v; B: %v", errA, errB)
	}
	t.Logf("two nodes up at once on an empty database in %s: A %s, B %s",
		time.Since(began).Round(time.Millisecond), a.frontend, b.frontend)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dialNode := func(n *pgNode) client.Client {
		c, err := client.DialContext(ctx, client.Options{HostPort: n.frontend, Logger: quietLogger{}})
		if err != nil {
			t.Fatalf("dialing %s at %s: %v", n.name, n.frontend, err)
		}
		t.Cleanup(c.Close)
		return c
	}
	ca, cb := dialNode(a), dialNode(b)

	// One cluster: B's frontend sees both nodes' history services.
	conn, err := grpc.NewClient(b.frontend, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin := adminservice.NewAdminServiceClient(conn)
	for {
		resp, err := admin.DescribeCluster(ctx, &adminservice.DescribeClusterRequest{})
		if err != nil {
			t.Fatalf("describing the cluster through B: %v", err)
		}
		members := 0
		for _, r := range resp.GetMembershipInfo().GetRings() {
			if r.GetRole() == "history" {
				members = int(r.GetMemberCount())
			}
		}
		if members == 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("B's membership never showed two history services (last %d): %v", members, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}

	const taskQueue = "sluice-pg-cluster"
	w := worker.New(cb, taskQueue, worker.Options{})
	w.RegisterWorkflow(waitSignal)
	if err := w.Start(); err != nil {
		t.Fatalf("starting worker on B: %v", err)
	}
	t.Cleanup(w.Stop)

	// The workflows' shards are spread over both history services, so
	// some are A's and move to B when A dies. Which shards a node owns
	// depends on the ring (random ports), so 16 fixed IDs can all land on
	// one node (seen: all 16 on one node for 5 minutes): start at least 16,
	// and more until both nodes own some.
	var runs []client.WorkflowRun
	owners := map[string]int{}
	for len(runs) < 16 || len(owners) < 2 {
		if len(runs) == 256 {
			t.Fatalf("%d workflows live on history services %v, want both nodes'", len(runs), owners)
		}
		i := len(runs)
		run, err := ca.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: fmt.Sprintf("pg-cluster-%d", i), TaskQueue: taskQueue,
		}, waitSignal)
		if err != nil {
			t.Fatalf("starting workflow %d through A: %v", i, err)
		}
		runs = append(runs, run)
		ms, err := admin.DescribeMutableState(ctx, &adminservice.DescribeMutableStateRequest{
			Namespace: embedded.DefaultNamespace,
			Execution: &commonpb.WorkflowExecution{WorkflowId: run.GetID(), RunId: run.GetRunID()},
		})
		if err != nil {
			t.Fatalf("describing %s's mutable state: %v", run.GetID(), err)
		}
		owners[ms.GetHistoryAddr()]++
	}
	workflows := len(runs)
	t.Logf("the %d workflows' shards: %v", workflows, owners)

	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing A: %v", err)
	}
	<-a.done
	killed := time.Now()

	failures := 0
	for i, run := range runs {
		// Until B's history service owns the dead node's shards, a
		// signal to a workflow on them fails: retry it.
		for {
			err := cb.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), "go", fmt.Sprint(i))
			if err == nil {
				break
			}
			failures++
			if ctx.Err() != nil {
				t.Fatalf("signalling %s through B after A's kill: %v", run.GetID(), err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for i, run := range runs {
		var got string
		if err := cb.GetWorkflow(ctx, run.GetID(), run.GetRunID()).Get(ctx, &got); err != nil || got != fmt.Sprint(i) {
			t.Fatalf("workflow %s through B: %q, %v; want %d", run.GetID(), got, err, i)
		}
	}
	t.Logf("after A's kill, B completed all %d workflows (%v by history service before) in %s (%d signal attempts failed meanwhile)",
		workflows, owners, time.Since(killed).Round(time.Millisecond), failures)

	for _, n := range []*pgNode{a, b} {
		out, err := os.ReadFile(n.logPath) // B's so far
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), password) {
			t.Errorf("%s printed the database password", n.name)
		}
		if !strings.Contains(string(out), "sluice_test_") {
			t.Errorf("%s's output does not name its database: %.1000s", n.name, out)
		}
	}
}
