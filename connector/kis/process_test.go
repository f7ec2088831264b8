package kis_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/kis"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
	simkis "github.com/sluicehq/sluice/simulator/kis"
)

// Environment of a helper process.
const (
	envHelper = "SLUICE_KIS_TOKEN_HELPER"
	envURL    = "SLUICE_KIS_TOKEN_HELPER_URL"
	envStore  = "SLUICE_KIS_TOKEN_HELPER_STORE"
	envNow    = "SLUICE_KIS_TOKEN_HELPER_NOW"
	envGo     = "SLUICE_KIS_TOKEN_HELPER_GO"
	envSim    = "SLUICE_KIS_TOKEN_HELPER_SIM" // "1": use the simulator's test credentials
)

// TestTokenHelperProcess is not a test: it is the worker process that
// TestTokenIssuedOnceAcrossProcesses starts N times. It waits for the go
// file, so that all of them start at once, then fetches the KIS dataset
// through the file token store.
func TestTokenHelperProcess(t *testing.T) {
	if os.Getenv(envHelper) != "1" {
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(os.Getenv(envGo)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the go file never appeared")
		}
		time.Sleep(2 * time.Millisecond)
	}
	now, err := time.Parse(time.RFC3339Nano, os.Getenv(envNow))
	if err != nil {
		t.Fatal(err)
	}
	store, err := tokenstore.NewFile(os.Getenv(envStore))
	if err != nil {
		t.Fatal(err)
	}
	reg := connectortest.Registry(t)
	_, lg := connectortest.NewLog()
	creds := connectortest.Credentials()
	if os.Getenv(envSim) == "1" {
		creds = connector.MapCredentials(simulator.TestCredentials(reg))
	}
	c, err := kis.New(reg.Provider("kis"), connector.Options{BaseURL: os.Getenv(envURL), Credentials: creds,
		TokenStore: store, Logger: lg, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Fetch(context.Background(), connector.Request{Dataset: reg.Dataset(connectortest.KISDataset),
		From: now.AddDate(0, 0, -7), To: now})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
}

// runHelpers starts n processes at once at the given (fake) time and
// waits for all of them.
func runHelpers(t *testing.T, n int, url, store string, now time.Time, env ...string) {
	t.Helper()
	goFile := filepath.Join(t.TempDir(), "go")
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTokenHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), envHelper+"=1", envURL+"="+url, envStore+"="+store,
			envNow+"="+now.Format(time.RFC3339Nano), envGo+"="+goFile)
		cmd.Env = append(cmd.Env, env...)
		outs[i] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper %d: %v\n%s", i, err, outs[i])
		}
	}
}

func TestTokenIssuedOnceAcrossProcesses(t *testing.T) {
	const n = 5
	fake, srv := newFakeKIS(t, t0)
	store := filepath.Join(t.TempDir(), "tokens")

	runHelpers(t, n, srv.URL, store, t0)
	tokens, data := fake.counts()
	if tokens != 1 || data != n {
		t.Fatalf("%d processes at once: %d token calls, %d data calls; want 1 and %d", n, tokens, data, n)
	}
	assertAllUsed(t, fake, fake.issued[0])

	// A restart an hour later reuses the stored token.
	fake.setNow(t0.Add(time.Hour))
	runHelpers(t, 1, srv.URL, store, t0.Add(time.Hour))
	if tokens, _ := fake.counts(); tokens != 1 {
		t.Fatalf("a restart issued a token: %d token calls", tokens)
	}

	// 30 minutes before expiry, n processes at once refresh it exactly once.
	late := t0.Add(23*time.Hour + 30*time.Minute)
	fake.setNow(late)
	fake.mu.Lock()
	fake.usedTokens = nil
	fake.mu.Unlock()
	runHelpers(t, n, srv.URL, store, late)
	if tokens, _ := fake.counts(); tokens != 2 {
		t.Fatalf("expiry: %d token calls, want 2 (exactly one refresh)", tokens)
	}
	assertAllUsed(t, fake, fake.issued[1])
}

func assertAllUsed(t *testing.T, f *fakeKIS, tok string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, u := range f.usedTokens {
		if u != tok {
			t.Errorf("data call %d used %s, want %s", i, short(u), short(tok))
		}
	}
}

func short(s string) string { return fmt.Sprintf("…%s", s[max(0, len(s)-12):]) }

func TestTokenIssuedOnceAcrossProcessesAgainstTheSimulator(t *testing.T) {
	const n = 5
	clk := &clock{t: time.Now().Truncate(time.Second)}
	s := startSim(t, simulator.Options{Seed: 1, Now: clk.Now})
	run := func(k int) { runHelpers(t, k, s.url, s.store, clk.Now(), envSim+"=1") }
	check := func(phase string, requests, issued int64) {
		t.Helper()
		st := s.scope(t)
		if st.TokenRequests != requests || st.TokensIssued != issued || st.TokenRejected != 0 || st.Violations != 0 {
			t.Fatalf("%s: token requests %d, issued %d, rejected %d, violations %d; want %d, %d, 0, 0",
				phase, st.TokenRequests, st.TokensIssued, st.TokenRejected, st.Violations, requests, issued)
		}
	}
	run(n)
	check("5 processes at once", 1, 1)
	clk.Add(time.Hour)
	run(1)
	check("a restart", 1, 1)
	simkis.ExpireTokens(s.sim)
	clk.Add(2 * time.Minute)
	run(n)
	check("5 processes after expiry", 2, 2)
}

// simEnv is the simulator serving the sample registry, and the token
// store the helper processes share.
type simEnv struct {
	sim   *simulator.Simulator
	url   string
	store string
}

func startSim(t *testing.T, opts simulator.Options) *simEnv {
	t.Helper()
	reg := connectortest.Registry(t)
	opts.Registry = reg
	sim, err := simulator.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return &simEnv{sim: sim, url: srv.URL, store: filepath.Join(t.TempDir(), "tokens")}
}

func (s *simEnv) scope(t *testing.T) *simulator.ScopeStats {
	t.Helper()
	st := s.sim.Stats().Scopes["kis/key"]
	if st == nil {
		t.Fatalf("no kis/key scope in %v", s.sim.Stats().Scopes)
	}
	return st
}
