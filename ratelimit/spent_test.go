package ratelimit

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

// TestGateSendsNothingAgainstASpentQuota: once a provider answers that a
// scope's daily quota is used up (data.go.kr's code 22), the gate refuses
// every later call against that scope — of any dataset, probe or backfill —
// until the quota resets, without asking the limiter or the provider; the
// refusal carries Sluice's own code (so the watch counts it as our own
// throttling) and the reset. The gate's own quota refusals are not
// remembered. (The old gate let every dataset and probe call again and
// hear code 22 again, each call counted by the provider.)
func TestGateSendsNothingAgainstASpentQuota(t *testing.T) {
	now := time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC)
	reg := spentRegistry(t)
	g, err := NewGate(GateOptions{Registry: reg, Client: NewClient(nil, ClientOptions{}), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	call := permit.Call{Provider: "datago", Dataset: "datago-a", Kind: permit.CallData}
	other := permit.Call{Provider: "datago", Dataset: "datago-b", Kind: permit.CallData, Priority: permit.PriorityBackfill}
	reset := now.Add(9 * time.Hour)
	// The gate's own refusal is not the provider's word.
	g.Observe(context.Background(), permit.Observation{Call: call, Err: &connector.Error{Class: connector.QuotaExhausted, Code: CodeQuota, ResetAt: reset}})
	if e := g.spentError(call, reg.ScopesFor(call.Dataset)); e != nil {
		t.Fatalf("the gate's own quota refusal was remembered as the provider's: %v", e)
	}
	g.Observe(context.Background(), permit.Observation{Call: call, Status: 429, Err: &connector.Error{Class: connector.QuotaExhausted,
		Provider: "datago", Code: "22", Message: "LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR", ResetAt: reset, Status: 429}})
	for _, c := range []permit.Call{call, other, {Provider: "datago", Dataset: "datago-a", Kind: permit.CallData, Probe: true}} {
		_, err := g.Wait(context.Background(), c)
		e := connector.AsError(err)
		if e == nil || e.Class != connector.QuotaExhausted || e.Code != CodeQuota || !e.ResetAt.Equal(reset) {
			t.Fatalf("call %+v after the provider's code 22: got %v, want a refusal with Sluice's own code until %v", c, err, reset)
		}
		if !strings.Contains(e.Message, "code 22") {
			t.Errorf("refusal %q does not name the provider's code", e.Message)
		}
	}
	// A scope the answer did not concern stays open.
	if e := g.spentError(permit.Call{Provider: "datago", Dataset: "datago-c"}, reg.ScopesFor("datago-c")); e != nil {
		t.Errorf("another service's scope was refused: %v", e)
	}
	now = reset
	if e := g.spentError(call, reg.ScopesFor(call.Dataset)); e != nil {
		t.Errorf("at the reset the scope is still refused: %v", e)
	}
}

// spentRegistry has one data.go.kr provider whose datasets a and b share
// service 1 and dataset c uses service 2, each service with a daily quota.
func spentRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	providers := `providers:
  - id: datago
    timezone: Asia/Seoul
    auth: {strategy: service_key, param: serviceKey, credentials: {service_key: DATAGO_SERVICE_KEY}}
    rate_limits:
      - scope: service
        requests_per_day: 1000
        min_interval_seconds: 2
`
	ds := func(id, svc string) []byte {
		return []byte("id: " + id + "\nprovider: datago\nscope_key: \"" + svc + "\"\nrequest: {path: /" + id + "/get, params: {resultType: json}}\n")
	}
	fsys := fstest.MapFS{
		"providers.yaml":  {Data: []byte(providers)},
		"datasets/a.yaml": {Data: ds("datago-a", "1")},
		"datasets/b.yaml": {Data: ds("datago-b", "1")},
		"datasets/c.yaml": {Data: ds("datago-c", "2")},
	}
	reg, err := registry.Load(fsys, "spent", registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// fakeTracker records a permit's reports.
type fakeTracker struct{ left, done int }

func (f *fakeTracker) Leave(time.Time) bool { f.left++; return true }
func (f *fakeTracker) Wrote(time.Time)      {}
func (f *fakeTracker) Done(time.Time)       { f.done++ }

// TestPermitGrantedBeforeTheQuotaWasSpentDoesNotLeave: a call granted
// while an earlier call of the same service was out is stopped at its last
// check once that call's answer said the quota is spent (the first e2e run
// of TestSpentQuotaClosesTheService: two calls granted before the code 22
// arrived both went out).
func TestPermitGrantedBeforeTheQuotaWasSpentDoesNotLeave(t *testing.T) {
	now := time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC)
	reg := spentRegistry(t)
	g, err := NewGate(GateOptions{Registry: reg, Client: NewClient(nil, ClientOptions{}), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	call := permit.Call{Provider: "datago", Dataset: "datago-b", Kind: permit.CallData}
	inner := &fakeTracker{}
	guard := spentGuard{SendTracker: inner, g: g, call: call, scopes: reg.ScopesFor(call.Dataset)}
	if !guard.Leave(now) {
		t.Fatal("a permit of an open scope was stopped")
	}
	g.Observe(context.Background(), permit.Observation{Call: permit.Call{Provider: "datago", Dataset: "datago-a", Kind: permit.CallData},
		Err: &connector.Error{Class: connector.QuotaExhausted, Code: "22", ResetAt: now.Add(time.Hour)}})
	inner2 := &fakeTracker{}
	guard = spentGuard{SendTracker: inner2, g: g, call: call, scopes: reg.ScopesFor(call.Dataset)}
	if guard.Leave(now) {
		t.Fatal("a permit granted before the provider's code 22 still left")
	}
	if inner2.done != 1 {
		t.Errorf("the stopped permit was not settled (done %d): its send record would wait for an answer forever", inner2.done)
	}
}
