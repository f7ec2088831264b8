package tokenkeeper_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sluicehq/sluice/codec"
	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/kis"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
	"github.com/sluicehq/sluice/tokenkeeper"
	"github.com/sluicehq/sluice/workflows"
)

// One embedded Temporal server for the package's tests; each test works
// in a namespace-wide id space of its own (its own task queue and keys).
var (
	serverOnce sync.Once
	server     *embedded.Server
	serverErr  error
	serverDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if server != nil {
		_ = server.Stop()
	}
	if serverDir != "" {
		_ = os.RemoveAll(serverDir)
	}
	os.Exit(code)
}

func temporal(t *testing.T) *embedded.Server {
	t.Helper()
	serverOnce.Do(func() {
		if serverDir, serverErr = os.MkdirTemp("", "tokenkeeper-"); serverErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		server, serverErr = embedded.Start(ctx, embedded.Options{DataDir: serverDir, FrontendAddr: "127.0.0.1:0", UIAddr: embedded.UIOff,
			Logger: slog.New(slog.DiscardHandler)})
	})
	if serverErr != nil {
		t.Fatalf("starting Temporal: %v", serverErr)
	}
	return server
}

func testCodec(t *testing.T) *codec.Codec {
	t.Helper()
	ring, err := codec.ParseKeyring("test", "test:"+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, codec.KeySize)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := codec.New(ring)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// dial connects a plain client (no codec): what anyone reading history
// without the key sees.
func dial(t *testing.T) (client.Client, client.Options) {
	t.Helper()
	srv := temporal(t)
	opts := client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace(), Logger: quiet{}}
	tc, err := client.Dial(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	return tc, opts
}

// machine is one worker host: its own Temporal connection, a keeper
// worker on it, a store and a KIS connector — and no filesystem shared
// with any other machine.
type machine struct {
	name  string
	store *tokenkeeper.Store
	kis   *kis.Connector
	log   *connectortest.Log
}

type rig struct {
	t     *testing.T
	queue string
	codec *codec.Codec
	reg   *registry.Registry
	sim   *simulator.Simulator
	url   string
	clk   *clock
	plain client.Client
	creds map[string]string // the simulator's credentials
}

var rigSeq atomic.Int64

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, queue: fmt.Sprintf("tokens-test-%d", rigSeq.Add(1)), codec: testCodec(t), reg: connectortest.Registry(t),
		clk: &clock{t: time.Now().Truncate(time.Second)}}
	r.plain, _ = dial(t)
	r.creds = simulator.TestCredentials(r.reg)
	var err error
	r.sim, err = simulator.New(simulator.Options{Registry: r.reg, Seed: 1, RateScale: 100, Now: r.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(r.sim.Handler())
	t.Cleanup(hs.Close)
	r.url = hs.URL
	return r
}

// machine starts a machine: a sealing client on its own connection, a
// keeper worker, a store and a KIS connector on the rig's clock.
func (r *rig) machine(name string, ttl time.Duration) *machine {
	r.t.Helper()
	base, opts := dial(r.t)
	sealed, err := tokenkeeper.SealingClient(context.Background(), base, opts, r.codec)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(sealed.Close)
	w := sdkworker.New(sealed, tokenkeeper.TaskQueue(r.queue), sdkworker.Options{})
	w.RegisterWorkflowWithOptions(workflows.TokenKeeper, workflow.RegisterOptions{Name: tokenkeeper.WorkflowName})
	if err := w.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(w.Stop)
	log, lg := connectortest.NewLog()
	store, err := tokenkeeper.NewStore(sealed, tokenkeeper.StoreOptions{TaskQueue: tokenkeeper.TaskQueue(r.queue), LeaseTTL: ttl, Holder: name, Logger: lg})
	if err != nil {
		r.t.Fatal(err)
	}
	c, err := kis.New(r.reg.Provider("kis"), connector.Options{BaseURL: r.url, Credentials: connector.MapCredentials(r.creds),
		TokenStore: store, Now: r.clk.Now, Logger: lg})
	if err != nil {
		r.t.Fatal(err)
	}
	return &machine{name: name, store: store, kis: c, log: log}
}

func (r *rig) key() string {
	return kis.TokenKey(r.url, r.creds["KIS_APP_KEY"], r.creds["KIS_APP_SECRET"])
}

func (r *rig) fetch(m *machine) error {
	req := connector.Request{Dataset: r.reg.Dataset(connectortest.KISDataset),
		From: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC), To: time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC)}
	resp, err := m.kis.Fetch(context.Background(), req)
	return connector.Drain(resp, err)
}

// fetchAll sends n calls from every machine at once. The clock stands
// still meanwhile, so the simulator counts them in one instant: keep them
// within the data limit (5 a second) — pacing data calls is the
// limiter's job, not the token store's.
func (r *rig) fetchAll(ms []*machine, n int) {
	r.t.Helper()
	var wg sync.WaitGroup
	for _, m := range ms {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := r.fetch(m); err != nil {
					r.t.Errorf("%s: %v", m.name, err)
				}
			}()
		}
	}
	wg.Wait()
}

func (r *rig) tokenStats() *simulator.ScopeStats {
	r.t.Helper()
	st := r.sim.Stats().Scopes["kis/key"]
	if st == nil {
		r.t.Fatalf("no kis/key scope in %v", r.sim.Stats().Scopes)
	}
	return st
}

func (r *rig) check(phase string, requests, issued int64) {
	r.t.Helper()
	st := r.tokenStats()
	if st.TokenRequests != requests || st.TokensIssued != issued || st.TokenRejected != 0 || st.Violations != 0 {
		r.t.Fatalf("%s: token requests %d, issued %d, rejected (EGW00133) %d, violations %d; want %d, %d, 0, 0",
			phase, st.TokenRequests, st.TokensIssued, st.TokenRejected, st.Violations, requests, issued)
	}
}

// TestOneIssuancePerWindowAcrossMachines: three machines that share only
// Temporal fetch at once and the token endpoint is asked once; a fourth
// machine started an hour later asks nothing; 59 minutes before expiry
// the three refresh it exactly once, and every call after uses the new
// token. Nothing in the keeper's history — read without the key — shows
// the token, the app key or the app secret, and the codec endpoint the
// Web UI would call shows the history's payloads with the token redacted.
// On the file store (one directory per machine) the same run asks three
// times within the minute, and KIS refuses two of them (EGW00133).
func TestOneIssuancePerWindowAcrossMachines(t *testing.T) {
	r := newRig(t)
	ms := []*machine{r.machine("m1", 0), r.machine("m2", 0), r.machine("m3", 0)}
	r.fetchAll(ms, 1)
	r.check("three machines at once", 1, 1)

	r.clk.Add(time.Hour)
	late := r.machine("m4", 0)
	if err := r.fetch(late); err != nil {
		t.Fatal(err)
	}
	r.check("a machine started an hour later", 1, 1)

	first, ok, err := ms[0].store.Load(context.Background(), r.key())
	if err != nil || !ok || first.AccessToken == "" {
		t.Fatalf("Load: %v %v %v", first, ok, err)
	}
	r.clk.Set(first.ExpiresAt.Add(-kis.RefreshBefore + time.Minute)) // 59 min before expiry
	r.fetchAll(append(ms, late), 1)
	r.check("refresh 59 minutes before expiry", 2, 2)
	second, _, _ := ms[1].store.Load(context.Background(), r.key())
	if second.AccessToken == first.AccessToken || !second.ExpiresAt.After(first.ExpiresAt) {
		t.Fatalf("the refresh did not store a new token: %v then %v", first, second)
	}
	// Past the old token's expiry the simulator refuses it: every machine
	// must be using the new one, and nobody asks again.
	r.clk.Set(first.ExpiresAt.Add(time.Minute))
	r.fetchAll(append(ms, late), 1)
	r.check("after the old token expired", 2, 2)

	secrets := append(connectortest.SecretValuesOf(r.creds), first.AccessToken, second.AccessToken)
	hist := r.history(r.key())
	connectortest.AssertNoSecrets(t, "the keeper's history", hist, secrets...)
	if !strings.Contains(hist, codec.EncodingEncrypted) {
		t.Error("the keeper's history holds no sealed payload: the check checked nothing")
	}
	connectortest.AssertNoSecrets(t, "the keeper's workflow id", tokenkeeper.WorkflowID(r.key()), secrets...)
	for _, m := range append(ms, late) {
		connectortest.AssertNoSecrets(t, m.name+"'s log", m.log.String(), secrets...)
	}
	decoded := r.decodeViaEndpoint(r.key())
	connectortest.AssertNoSecrets(t, "the codec endpoint's decoded history", decoded, secrets...)
	if !strings.Contains(decoded, `\"access_token\":\"REDACTED\"`) || !strings.Contains(decoded, "expires_at") {
		t.Errorf("the codec endpoint did not decode the keeper's payloads: %.2000s", decoded)
	}
}

// TestFileStoresPerMachineTripTheLimit is the defect the keeper fixes:
// machines with a file store each (no shared filesystem) all ask the token
// endpoint, and KIS refuses all but one within the minute (EGW00133).
func TestFileStoresPerMachineTripTheLimit(t *testing.T) {
	r := newRig(t)
	var ms []*machine
	for i := range 3 {
		fs, err := newFileStore(t)
		if err != nil {
			t.Fatal(err)
		}
		c, err := kis.New(r.reg.Provider("kis"), connector.Options{BaseURL: r.url, Credentials: connector.MapCredentials(r.creds),
			TokenStore: fs, Now: r.clk.Now, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, &machine{name: fmt.Sprintf("file-%d", i), kis: c})
	}
	var refused int
	for _, m := range ms {
		if err := r.fetch(m); err != nil {
			refused++
		}
	}
	st := r.tokenStats()
	if st.TokenRequests != 3 || st.TokenRejected != 2 || refused != 2 {
		t.Errorf("file stores: %d token requests, %d refused by KIS, %d calls failed; want 3, 2, 2", st.TokenRequests, st.TokenRejected, refused)
	}
}

// history returns every event of a keeper's run and its description, as
// protobuf JSON and raw protobuf, read with a client that has no key.
func (r *rig) history(key string) string {
	r.t.Helper()
	var b strings.Builder
	ctx := context.Background()
	it := r.plain.GetWorkflowHistory(ctx, tokenkeeper.WorkflowID(key), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	events := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			r.t.Fatal(err)
		}
		events++
		raw, _ := proto.Marshal(ev)
		b.Write(raw)
		b.WriteString(protojson.Format(ev))
	}
	if events == 0 {
		r.t.Fatal("the keeper has no history")
	}
	if d, err := r.plain.DescribeWorkflowExecution(ctx, tokenkeeper.WorkflowID(key), ""); err == nil {
		b.WriteString(protojson.Format(d))
	}
	return b.String()
}

// decodeViaEndpoint sends every payload of the keeper's history through
// the codec endpoint, as the Web UI does, and returns the answers.
func (r *rig) decodeViaEndpoint(key string) string {
	r.t.Helper()
	srv := httptest.NewServer(codec.Handler(r.codec, codec.HandlerOptions{}))
	defer srv.Close()
	var out strings.Builder
	it := r.plain.GetWorkflowHistory(context.Background(), tokenkeeper.WorkflowID(key), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			r.t.Fatal(err)
		}
		var ps []*commonpb.Payload
		collectPayloads(ev.ProtoReflect(), &ps)
		if len(ps) == 0 {
			continue
		}
		body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: ps})
		resp, err := http.Post(srv.URL+"/decode", "application/json", bytes.NewReader(body))
		if err != nil {
			r.t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			r.t.Fatalf("decode: %d %s", resp.StatusCode, data)
		}
		var dec commonpb.Payloads
		if err := protojson.Unmarshal(data, &dec); err != nil {
			r.t.Fatal(err)
		}
		for _, p := range dec.Payloads {
			out.WriteString(fmt.Sprintf("%q\n", p.GetData()))
		}
	}
	return out.String()
}

// TestSaveNeedsTheLease: a Save outside WithLock, or after the lease was
// lost (the keeper terminated mid-issue), fails; fn's context ends with
// ErrLeaseLost once renewals have failed for a TTL.
func TestSaveNeedsTheLease(t *testing.T) {
	r := newRig(t)
	m := r.machine("m1", tokenkeeper.MinLeaseTTL)
	ctx := context.Background()
	key := "kis-lease-test"
	if err := m.store.Save(ctx, key, connector.Token{AccessToken: "x"}); err == nil {
		t.Fatal("Save outside WithLock succeeded")
	}
	err := m.store.WithLock(ctx, key, func(ctx context.Context) error {
		if err := m.store.Save(ctx, key, connector.Token{RequestedAt: r.clk.Now()}); err != nil {
			return err
		}
		if err := r.plain.TerminateWorkflow(context.Background(), tokenkeeper.WorkflowID(key), "", "test: keeper terminated mid-issue"); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute):
			return errors.New("fn's context did not end after the lease was lost")
		}
		if !errors.Is(context.Cause(ctx), tokenkeeper.ErrLeaseLost) {
			return fmt.Errorf("fn's context ended with %v", context.Cause(ctx))
		}
		if err := m.store.Save(context.Background(), key, connector.Token{AccessToken: "late"}); err != nil {
			return nil // refused: as it must be
		}
		return errors.New("Save under a lost lease succeeded")
	})
	if !errors.Is(err, tokenkeeper.ErrLeaseLost) && err != nil {
		t.Fatal(err)
	}
}

// TestTerminatedKeeperIsSeeded: an operator terminates the keeper. A
// machine that never saw the token still finds it (a query reads the
// terminated run), and the next lease starts a new keeper seeded with it:
// the token and its request time survive, and nobody issues again.
func TestTerminatedKeeperIsSeeded(t *testing.T) {
	r := newRig(t)
	a := r.machine("a", 0)
	if err := r.fetch(a); err != nil {
		t.Fatal(err)
	}
	r.check("first fetch", 1, 1)
	tok, _, _ := a.store.Load(context.Background(), r.key())
	if err := r.plain.TerminateWorkflow(context.Background(), tokenkeeper.WorkflowID(r.key()), "", "test"); err != nil {
		t.Fatal(err)
	}
	b := r.machine("b", 0)
	if err := r.fetch(b); err != nil {
		t.Fatal(err)
	}
	r.check("a new machine after the terminate", 1, 1)
	// b's lease starts a new keeper, seeded with what b read.
	if err := b.store.WithLock(context.Background(), r.key(), func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	desc, err := r.plain.DescribeWorkflowExecution(context.Background(), tokenkeeper.WorkflowID(r.key()), "")
	if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("no new keeper runs: %v %v", desc.GetWorkflowExecutionInfo().GetStatus(), err)
	}
	c := r.machine("c", 0)
	got, ok, err := c.store.Load(context.Background(), r.key())
	if err != nil || !ok || got.AccessToken != tok.AccessToken || !got.RequestedAt.Equal(tok.RequestedAt) {
		t.Fatalf("the new keeper holds %v %v %v, want the token and request time of the old", got, ok, err)
	}
	r.clk.Add(time.Second)
	if err := r.fetch(c); err != nil {
		t.Fatal(err)
	}
	r.check("a machine on the new keeper", 1, 1)
}

// collectPayloads appends every Payload inside m.
func collectPayloads(m protoreflect.Message, out *[]*commonpb.Payload) {
	if p, ok := m.Interface().(*commonpb.Payload); ok {
		*out = append(*out, p)
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := range v.List().Len() {
				collectPayloads(v.List().Get(i).Message(), out)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				collectPayloads(mv.Message(), out)
				return true
			})
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			collectPayloads(v.Message(), out)
		}
		return true
	})
}

func newFileStore(t *testing.T) (connector.TokenStore, error) { return tokenstore.NewFile(t.TempDir()) }

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
