package activities

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/sluicehq/sluice/connector"
	_ "github.com/sluicehq/sluice/connector/all"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
)

func testGate(t *testing.T, maxQuotaWait time.Duration) *ratelimit.Gate {
	t.Helper()
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := ratelimit.NewGate(ratelimit.GateOptions{Registry: reg, Client: ratelimit.NewClient(nil, ratelimit.ClientOptions{}), MaxQuotaWait: maxQuotaWait})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestTemporalErrorMapsClasses(t *testing.T) {
	a := &Activities{cfg: Config{Gate: testGate(t, time.Hour)}}
	ctx := context.Background()
	now := time.Now()
	tests := []struct {
		name         string
		err          error
		nonRetryable bool
		typ          string
		delayMin     time.Duration
		delayMax     time.Duration
	}{
		{"auth", &connector.Error{Class: connector.AuthFailed, Provider: "fred", Code: "400"}, true, "auth_failed", 0, 0},
		{"bad request", &connector.Error{Class: connector.BadRequest, Provider: "ecos", Code: "ERROR-101"}, true, "bad_request", 0, 0},
		{"rate limited with a hint", &connector.Error{Class: connector.RateLimited, Provider: "kis", Code: "EGW00201", RetryAfter: 7 * time.Second}, false, "rate_limited", 7 * time.Second, 7 * time.Second},
		{"blocked until", &connector.Error{Class: connector.Blocked, Provider: "upbit", Code: "418", Until: now.Add(time.Minute)}, false, "blocked", 50 * time.Second, time.Minute},
		{"quota resets within the wait", &connector.Error{Class: connector.QuotaExhausted, Provider: "datago", Code: "22", ResetAt: now.Add(30 * time.Minute)}, true, "quota_exhausted", 0, 0},
		{"quota resets too late", &connector.Error{Class: connector.QuotaExhausted, Provider: "datago", Code: "22", ResetAt: now.Add(5 * time.Hour)}, true, "quota_exhausted", 0, 0},
		{"transient", &connector.Error{Class: connector.Transient, Provider: "ecos", Code: "ERROR-500"}, false, "transient", 500 * time.Millisecond, time.Second},
		{"unclassified is transient", errors.New("connection reset"), false, "transient", 500 * time.Millisecond, time.Second},
		// An ambiguous answer not yet confirmed waits at least what it asks
		// (the old mapping retried it after a second).
		{"unconfirmed waits its wait", &connector.Error{Class: connector.Transient, Unconfirmed: connector.AuthFailed, Provider: "datago", Code: "30",
			RetryAfter: connector.ConfirmWait}, false, "transient", connector.ConfirmWait, connector.ConfirmWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.temporalError(ctx, tt.err)
			var app *temporal.ApplicationError
			if !errors.As(err, &app) {
				t.Fatalf("not an application error: %v", err)
			}
			if app.NonRetryable() != tt.nonRetryable || app.Type() != tt.typ {
				t.Errorf("non-retryable %v type %q; want %v %q", app.NonRetryable(), app.Type(), tt.nonRetryable, tt.typ)
			}
			if d := app.NextRetryDelay(); d < tt.delayMin || d > tt.delayMax {
				t.Errorf("next retry delay %v, want %v to %v", d, tt.delayMin, tt.delayMax)
			}
		})
	}
	// A spent quota fails the activity at once, naming the reset and the
	// worker's --max-quota-wait for the workflow to decide (a durable
	// timer), never sleeping in the activity nor retrying into tomorrow.
	reset := now.Add(5 * time.Hour)
	err := a.temporalError(ctx, &connector.Error{Class: connector.QuotaExhausted, Provider: "datago", Code: "22", ResetAt: reset})
	if !strings.Contains(err.Error(), "daily quota resets at") {
		t.Errorf("quota message: %v", err)
	}
	if q, ok := ratelimit.QuotaWaitOf(err); !ok || !q.ResetAt.Equal(reset) || q.MaxWait != time.Hour {
		t.Errorf("quota wait of %v = %+v, %v", err, q, ok)
	}
	// A cancelled context wins over the provider's answer.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := a.temporalError(cctx, &connector.Error{Class: connector.AuthFailed}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestBackoffHasEqualJitterAndCap(t *testing.T) {
	for attempt := int32(1); attempt <= 12; attempt++ {
		want := time.Second << (attempt - 1)
		if want > time.Minute || want <= 0 {
			want = time.Minute
		}
		for range 50 {
			d := backoff(attempt, time.Second, time.Minute)
			if d < want/2 || d > want {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
}

func TestPlan(t *testing.T) {
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{cfg: Config{Registry: reg}}
	all, err := a.Plan(context.Background(), PlanInput{})
	if err != nil || len(all) != len(reg.Datasets) {
		t.Fatalf("plan of everything: %d items, %v", len(all), err)
	}
	fred, err := a.Plan(context.Background(), PlanInput{Providers: []string{"fred"}})
	if err != nil || len(fred) != 4 {
		t.Fatalf("plan of fred: %v, %v", fred, err)
	}
	one, err := a.Plan(context.Background(), PlanInput{Datasets: []string{"fred-dgs10"}})
	if err != nil || len(one) != 1 || one[0].Provider != "fred" {
		t.Fatalf("plan of one: %v, %v", one, err)
	}
	_, err = a.Plan(context.Background(), PlanInput{Providers: []string{"bok"}, Datasets: []string{"fred-dgs99"}})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || !strings.Contains(err.Error(), "provider bok, dataset fred-dgs99") {
		t.Errorf("unknown names: %v", err)
	}
}

func TestParseDates(t *testing.T) {
	from, to, err := parseDates(IngestInput{From: "2026-11-01", To: "2026-11-30"})
	if err != nil || from.Day() != 1 || to.Day() != 30 {
		t.Errorf("range: %v %v %v", from, to, err)
	}
	for _, bad := range []IngestInput{{From: "2026-13-01"}, {From: "2026-11-02", To: "2026-11-01"}, {From: "yesterday"}} {
		if _, _, err := parseDates(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestIngestRefusesDatasetWithoutScope: a dataset that counts against no
// rate-limit scope is never called without a permit: the activity fails
// with a non-retryable bad_request naming the reason, before any request
// leaves (the provider's base URL here accepts no connection at all).
func TestIngestRefusesDatasetWithoutScope(t *testing.T) {
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Drop FRED's scope, as a registry that let a dataset end up without
	// one would have.
	reg.Scopes = slices.DeleteFunc(reg.Scopes, func(s *registry.ScopeInstance) bool { return s.Provider.ID == "fred" })
	gate, err := ratelimit.NewGate(ratelimit.GateOptions{Registry: reg, Client: ratelimit.NewClient(nil, ratelimit.ClientOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	lake, err := sink.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Registry: reg, Sink: lake, Gate: gate, BaseURLs: map[string]string{"*": "http://127.0.0.1:1"},
		Credentials: connector.MapCredentials(map[string]string{"FRED_API_KEY": strings.Repeat("a", 32)})})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Ingest(context.Background(), IngestInput{Dataset: "fred-dgs10", From: "2026-11-27"})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || app.Type() != "bad_request" || !strings.Contains(err.Error(), "no rate-limit scope") {
		t.Fatalf("ingest of a dataset without a scope: %v", err)
	}
}

// TestWarmTokensBeforeABatch: WarmTokens has the KIS connector hold its
// access token before a batch, whose first ingest then asks the token
// endpoint nothing; a filter naming other providers leaves it alone.
func TestWarmTokensBeforeABatch(t *testing.T) {
	reg := pagedRegistry(t, pagedDatasets)
	st := newPagingStack(t, reg)
	ctx := context.Background()
	tokens := func() int64 { return st.sim.Stats().Scopes["kis/key"].TokensIssued }
	if err := WarmTokens(ctx, st.acts, []string{"fred", "ecos"}); err != nil || tokens() != 0 {
		t.Fatalf("warming fred and ecos: %v, %d kis tokens issued", err, tokens())
	}
	if err := WarmTokens(ctx, st.acts, nil); err != nil || tokens() != 1 {
		t.Fatalf("warming every provider: %v, %d kis tokens issued, want 1", err, tokens())
	}
	if _, err := st.acts.Ingest(ctx, IngestInput{Dataset: "kis-kospi-range", From: "2024-01-02", To: "2024-01-31"}); err != nil {
		t.Fatal(err)
	}
	if n := tokens(); n != 1 {
		t.Errorf("%d kis tokens issued after the ingest, want the warmed one alone", n)
	}
}
