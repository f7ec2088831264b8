package kis_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/kis"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
	simkis "github.com/sluicehq/sluice/simulator/kis"
)

// simEnv is the simulator serving the sample registry.
type simEnv struct {
	reg   *registry.Registry
	sim   *simulator.Simulator
	url   string
	creds connector.Credentials
	store string
	log   *connectortest.Log
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
	return &simEnv{reg: reg, sim: sim, url: srv.URL, creds: connector.MapCredentials(simulator.TestCredentials(reg)),
		store: filepath.Join(t.TempDir(), "tokens")}
}

func (s *simEnv) connector(t *testing.T, now func() time.Time) *kis.Connector {
	t.Helper()
	st, _ := tokenstore.NewFile(s.store)
	log, lg := connectortest.NewLog()
	s.log = log
	c, err := kis.New(s.reg.Provider("kis"), connector.Options{BaseURL: s.url, Credentials: s.creds, TokenStore: st, Logger: lg, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (s *simEnv) scope(t *testing.T) *simulator.ScopeStats {
	t.Helper()
	st := s.sim.Stats().Scopes["kis/key"]
	if st == nil {
		t.Fatalf("no kis/key scope in %v", s.sim.Stats().Scopes)
	}
	return st
}

type kisAnswer struct {
	RtCd    string            `json:"rt_cd"`
	MsgCd   string            `json:"msg_cd"`
	Output2 []json.RawMessage `json:"output2"`
}

func TestSimulatorFetchAndPaging(t *testing.T) {
	s := startSim(t, simulator.Options{Seed: 1, RateScale: 100})
	c := s.connector(t, nil)
	req := connector.Request{Provider: s.reg.Provider("kis"), Dataset: s.reg.Dataset(connectortest.KISDataset),
		From: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2025, 4, 30, 0, 0, 0, 0, time.UTC)}
	rows := 0
	for page := 1; ; page++ {
		req.Page = page
		resp, err := c.Fetch(context.Background(), req)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		var a kisAnswer
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if a.RtCd != "0" || len(a.Output2) == 0 || len(a.Output2) > 50 {
			t.Fatalf("page %d: rt_cd %s, %d rows", page, a.RtCd, len(a.Output2))
		}
		rows += len(a.Output2)
		if !resp.More {
			break
		}
		if page > 5 {
			t.Fatal("paging never ends")
		}
	}
	if rows < 70 || rows > 90 {
		t.Errorf("January to April 2025 gave %d business days", rows)
	}
	if st := s.scope(t); st.TokensIssued != 1 || st.Violations != 0 {
		t.Errorf("tokens issued %d, violations %d", st.TokensIssued, st.Violations)
	}
	connectortest.AssertNoSecrets(t, "log", s.log.String(), connectortest.SecretValuesOf(simulator.TestCredentials(s.reg))...)
}

func TestSimulatorConcurrentCallersOneToken(t *testing.T) {
	s := startSim(t, simulator.Options{Seed: 1, RateScale: 100})
	c := s.connector(t, nil)
	req := connector.Request{Provider: s.reg.Provider("kis"), Dataset: s.reg.Dataset(connectortest.KISDataset),
		From: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC), To: time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC)}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Fetch(context.Background(), req)
			if err != nil {
				// Ten calls at once may exceed the data limit (pacing is the
				// global limiter's job); they must still be classified.
				if cl, _ := connector.ClassOf(err); cl != connector.RateLimited {
					t.Error(err)
				}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	if st := s.scope(t); st.TokenRequests != 1 || st.TokenRejected != 0 {
		t.Errorf("token requests %d, rejected %d", st.TokenRequests, st.TokenRejected)
	}
}

func TestSimulatorExpiredAndInvalidTokensAreReplacedOnce(t *testing.T) {
	clk := &clock{t: time.Now()}
	s := startSim(t, simulator.Options{Seed: 1, Now: clk.Now}) // one clock for both sides
	c := s.connector(t, clk.Now)
	req := connector.Request{Provider: s.reg.Provider("kis"), Dataset: s.reg.Dataset(connectortest.KISDataset),
		From: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC), To: time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC)}
	fetch := func() error {
		resp, err := c.Fetch(context.Background(), req)
		return connector.Drain(resp, err)
	}
	if err := fetch(); err != nil {
		t.Fatal(err)
	}
	for i, force := range []func() int{func() int { return simkis.ExpireTokens(s.sim) }, func() int { return simkis.InvalidateTokens(s.sim) }} {
		force()
		clk.Add(2 * time.Minute) // past the once-a-minute rule
		if err := fetch(); err != nil {
			t.Fatalf("after forcing %d: %v", i, err)
		}
		st := s.scope(t)
		if st.TokenRequests != int64(i+2) || st.TokenRejected != 0 || st.Violations != 0 {
			t.Errorf("after forcing %d: token requests %d, rejected %d, violations %d", i, st.TokenRequests, st.TokenRejected, st.Violations)
		}
	}
}

func TestSimulatorRateLimitIsClassified(t *testing.T) {
	s := startSim(t, simulator.Options{Seed: 1, RateScale: 0.01}) // 5 calls per 100 s
	c := s.connector(t, nil)
	req := connector.Request{Provider: s.reg.Provider("kis"), Dataset: s.reg.Dataset(connectortest.KISDataset),
		From: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC), To: time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC)}
	limited := 0
	for range 8 {
		resp, err := c.Fetch(context.Background(), req)
		if err == nil {
			resp.Body.Close()
			continue
		}
		var e *connector.Error
		if c, _ := connector.ClassOf(err); c != connector.RateLimited || !asErr(err, &e) || e.Code != kis.CodeRateLimited {
			t.Fatalf("err = %v", err)
		}
		limited++
	}
	if limited != 3 {
		t.Errorf("%d of 8 calls rate limited, want 3 (limit 5)", limited)
	}
}
