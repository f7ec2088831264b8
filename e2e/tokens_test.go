//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/codec"
	"github.com/sluicehq/sluice/connector/kis"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/tokenkeeper"
	"github.com/sluicehq/sluice/workflows"
)

// simTokenPrefix starts every token the simulator issues (a JWT header,
// {"typ":"JWT","alg":"HS512"}): found anywhere, it is a token in clear.
const simTokenPrefix = "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzUxMiJ9"

// TestTokenSharedAcrossMachines runs the KIS batch on three `sluice
// worker` processes that share no filesystem — a data directory (token
// store, lake) each, the payload key copied to each — only Temporal: the
// token endpoint is asked once, never refused (EGW00133), and three fresh
// workers on new directories running the next day's batch ask nothing.
// The token, app key and app secret appear nowhere in the keeper's
// history, read without the key, nor in any worker's log. On today's file
// store each machine asks for its own token: three requests, two refused,
// and every KIS dataset of those workers waits a minute.
func TestTokenSharedAcrossMachines(t *testing.T) {
	t.Parallel()
	keyFile := writeKeyFile(t)
	c := newCluster(t, clusterOptions{workers: 3, ownDirs: true,
		workerArgs: []string{"--token-store", "keeper"}, workerEnv: []string{codec.EnvKeyFile + "=" + keyFile}})
	date := logicalDate()
	plan := planned("kis")
	res := c.runBatch(workflows.DailyIngestInput{Date: date, Providers: []string{"kis"}})
	checkSucceeded(t, byDataset(t, res, date, plan), nil)
	checkTokens := func(phase string) {
		t.Helper()
		var requests, issued, rejected int64
		for _, st := range c.sim.Stats().Scopes {
			requests += st.TokenRequests
			issued += st.TokensIssued
			rejected += st.TokenRejected
		}
		if requests != 1 || issued != 1 || rejected != 0 {
			t.Errorf("%s: the token endpoint was asked %d times, issued %d, refused %d (EGW00133); want 1, 1, 0", phase, requests, issued, rejected)
		}
	}
	checkTokens("three workers, one data directory each")
	checkLimits(t, c.sim.Stats(), nil, []string{"kis"})

	// Three new machines, empty directories, the next day's batch.
	old := c.workers
	for _, w := range old {
		c.stop(w)
	}
	fresh := []*workerProc{c.startWorker(4), c.startWorker(5), c.startWorker(6)}
	c.waitPollersOf(fresh)
	next := mustDate(t, date).AddDate(0, 0, -1).Format(time.DateOnly)
	res = c.runBatch(workflows.DailyIngestInput{Date: next, Providers: []string{"kis"}})
	checkSucceeded(t, byDataset(t, res, next, planned("kis")), nil)
	checkTokens("three fresh workers a batch later")

	// No secret in clear: the keeper's history and description, read with
	// a client that has no key, and every worker's log.
	creds := simulator.TestCredentials(reg)
	storeKey := kis.TokenKey(c.simURL, creds["KIS_APP_KEY"], creds["KIS_APP_SECRET"])
	token := c.keeperToken(storeKey, keyFile)
	secrets := []string{token, simTokenPrefix, creds["KIS_APP_KEY"], creds["KIS_APP_SECRET"]}
	hist := c.rawHistory(tokenkeeper.WorkflowID(storeKey))
	if !bytes.Contains(hist, []byte(codec.EncodingEncrypted)) {
		t.Error("the keeper's history holds no sealed payload: the check checks nothing")
	}
	for _, s := range secrets {
		if bytes.Contains(hist, []byte(s)) {
			t.Errorf("the keeper's history holds a secret in clear (%.12s…)", s)
		}
	}
	for _, w := range append(old, fresh...) {
		b, _ := os.ReadFile(w.log)
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s's log holds a secret in clear (%.12s…)", w.name, s)
			}
		}
		if _, err := os.Stat(filepath.Join(w.dataDir, "tokens")); err == nil {
			t.Errorf("%s kept a token file in %s: the keeper should hold it", w.name, w.dataDir)
		}
	}
}

// writeKeyFile writes a new payload key into a file of the test's own
// (mode 0600) and returns its path.
func writeKeyFile(t *testing.T) string {
	t.Helper()
	key, err := codec.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "codec.key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return keyFile
}

// keeperToken reads the token the keeper holds, as a worker with the key
// does.
func (c *cluster) keeperToken(storeKey, keyFile string) string {
	c.t.Helper()
	ring, err := codec.ReadKeyFile(keyFile)
	if err != nil {
		c.t.Fatal(err)
	}
	cd, _ := codec.New(ring)
	opts := client.Options{HostPort: temporalAddr, Namespace: c.ns, Logger: quietLogger{}}
	sealed, err := tokenkeeper.SealingClient(context.Background(), c.tc, opts, cd)
	if err != nil {
		c.t.Fatal(err)
	}
	defer sealed.Close()
	store, err := tokenkeeper.NewStore(sealed, tokenkeeper.StoreOptions{TaskQueue: tokenkeeper.TaskQueue(c.tq)})
	if err != nil {
		c.t.Fatal(err)
	}
	tok, ok, err := store.Load(context.Background(), storeKey)
	if err != nil || !ok || !strings.HasPrefix(tok.AccessToken, simTokenPrefix) {
		c.t.Fatalf("the keeper holds no simulator token: ok %v, %v", ok, err)
	}
	return tok.AccessToken
}

// rawHistory returns a workflow's events (every run's) and description as
// raw protobuf and protobuf JSON, read without any codec.
func (c *cluster) rawHistory(id string) []byte {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var b bytes.Buffer
	it := c.tc.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			c.t.Fatalf("reading the history of %s: %v", id, err)
		}
		raw, _ := proto.Marshal(ev)
		b.Write(raw)
		b.WriteString(protojson.Format(ev))
	}
	d, err := c.tc.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		c.t.Fatalf("describing %s: %v", id, err)
	}
	b.WriteString(protojson.Format(d))
	return b.Bytes()
}

// waitPollersOf waits until each of ws polls the activity task queue
// (pollers recently gone stay listed for a while: count these only).
func (c *cluster) waitPollersOf(ws []*workerProc) {
	c.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := c.checkWorkers(); err != nil {
			c.t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := c.tc.DescribeTaskQueue(ctx, c.tq, enums.TASK_QUEUE_TYPE_ACTIVITY)
		cancel()
		polling := 0
		for _, w := range ws {
			for _, p := range resp.GetPollers() {
				if strings.HasPrefix(p.GetIdentity(), fmt.Sprintf("%d@", w.pid())) {
					polling++
					break
				}
			}
		}
		if err == nil && polling == len(ws) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("waiting for %d new workers to poll %s: %d polling (last error %v)", len(ws), c.tq, polling, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
