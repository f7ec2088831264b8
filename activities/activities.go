// Package activities holds Sluice's Temporal activities: Ingest (fetch →
// zstd → lake as one stream, returning metadata only), Probe (the cheapest
// request that proves a dataset answers, recorded in the watch store) and
// Revisions (a landed object's rows compared with the dataset's previous
// object). Every provider call passes the global limiter of its scope
// instances first.
package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/upbit"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch/store"
)

// Config is what the activities need. Registry, Sink and Limiter are
// required.
type Config struct {
	Registry *registry.Registry
	Sink     sink.Sink
	Limiter  *ratelimit.Client
	Events   *events.Recorder // nil: events are only logged
	Metrics  *metrics.Metrics // nil: no metrics
	Logger   *slog.Logger     // nil: slog.Default()
	// BaseURLs overrides provider base URLs by provider id (the
	// simulator); "*" applies to every provider.
	BaseURLs map[string]string
	// Credentials looks up credentials by environment variable name (nil:
	// the environment, or NAME_FILE).
	Credentials connector.Credentials
	// TokenStore keeps KIS tokens across processes (nil: the connector's
	// file store).
	TokenStore connector.TokenStore
	// RateScale multiplies every declared rate (the simulator's
	// --rate-scale); ≤ 0 means 1.
	RateScale float64
	// Tolerance is the limiter's send tolerance (0: the default).
	Tolerance time.Duration
	// MaxQuotaWait is how long a call may wait for a daily quota to reset
	// before its dataset fails with QuotaExhausted (0: fail at once).
	MaxQuotaWait time.Duration
	// Watch is the watch store: probes are recorded in it and revisions
	// compared against it (nil: probes are classified but not recorded,
	// and no revision is looked for).
	Watch store.Store
}

// Activities are the activity methods, holding their clients. Safe for
// concurrent use.
type Activities struct {
	cfg        Config
	log        *slog.Logger
	connectors map[string]connector.Connector
	limits     map[string]ratelimit.Limits // by scope instance id
	now        func() time.Time            // the watch's clock; nil: time.Now
}

// New builds the activities and a connector per provider.
func New(cfg Config) (*Activities, error) {
	if cfg.Registry == nil || cfg.Sink == nil || cfg.Limiter == nil {
		return nil, errors.New("creating activities: registry, sink and limiter are required")
	}
	a := &Activities{cfg: cfg, log: cfg.Logger, connectors: map[string]connector.Connector{}, limits: map[string]ratelimit.Limits{}}
	if a.log == nil {
		a.log = slog.Default()
	}
	tol := cfg.Tolerance
	if tol <= 0 {
		tol = ratelimit.DefaultTolerance
	}
	for _, s := range cfg.Registry.Scopes {
		a.limits[s.ID] = ratelimit.FromScope(s, cfg.RateScale, tol)
	}
	for _, p := range cfg.Registry.Providers {
		if len(cfg.Registry.DatasetsOf(p.ID)) == 0 {
			continue
		}
		base := cfg.BaseURLs[p.ID]
		if base == "" {
			base = cfg.BaseURLs["*"]
		}
		c, err := connector.New(p, connector.Options{
			BaseURL:     base,
			Credentials: cfg.Credentials,
			TokenStore:  cfg.TokenStore,
			Logger:      a.log,
			Gate:        probeGate(a.gate),
			Observe:     a.observe,
		})
		if err != nil {
			return nil, fmt.Errorf("creating activities: %w", err)
		}
		a.connectors[p.ID] = c
	}
	return a, nil
}

// WarmLimiters starts the limiter workflow of every scope instance that
// has datasets, so the first calls of a batch do not wait for their start.
func (a *Activities) WarmLimiters(ctx context.Context) error {
	var errs []error
	for _, s := range a.cfg.Registry.Scopes {
		if len(s.Datasets) == 0 {
			continue
		}
		if err := a.cfg.Limiter.Warm(ctx, s.ID, a.limits[s.ID]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// gate waits for a permit from the limiter of every scope instance the
// call counts against. Token calls are paced by the token store (once a
// minute per app key), not here.
func (a *Activities) gate(ctx context.Context, call connector.Call) error {
	if call.Kind != connector.CallData {
		return nil
	}
	scopes := a.cfg.Registry.ScopesFor(call.Dataset)
	maxWait := a.cfg.MaxQuotaWait
	for attempt := 0; ; attempt++ {
		if attempt == 20 {
			return &connector.Error{Class: connector.Transient, Provider: call.Provider, Dataset: call.Dataset,
				Message: "could not hold permits of all its scopes at once"}
		}
		var permits []ratelimit.Permit
		late := false
		for _, s := range scopes {
			start := time.Now()
			var p ratelimit.Permit
			for {
				var err error
				p, err = a.cfg.Limiter.Acquire(ctx, s.ID, a.limits[s.ID], maxWait)
				if err != nil {
					var q *ratelimit.QuotaError
					if errors.As(err, &q) {
						a.event(ctx, events.Event{Kind: events.KindQuotaExhausted, Scope: s.ID, Provider: call.Provider, Dataset: call.Dataset,
							Message: fmt.Sprintf("declared daily quota of %d calls used up until %s", q.Quota, q.ResetAt.Format(time.RFC3339))})
						return &connector.Error{Class: connector.QuotaExhausted, Provider: call.Provider, Dataset: call.Dataset,
							Code: "sluice-quota", Message: q.Error(), ResetAt: q.ResetAt}
					}
					return fmt.Errorf("waiting for a permit of %s: %w", s.ID, err)
				}
				err = p.Wait(ctx, heartbeat(ctx))
				if errors.Is(err, ratelimit.ErrLate) {
					continue
				}
				if err != nil {
					return err
				}
				break
			}
			a.cfg.Metrics.Wait(s.ID, time.Since(start))
			permits = append(permits, p)
		}
		// With several scopes, waiting for a later one may have carried an
		// earlier permit past its deadline: then ask again.
		now := time.Now()
		for _, p := range permits {
			if now.After(p.Deadline) {
				late = true
			}
		}
		if !late {
			return nil
		}
	}
}

// observe counts calls and backs a scope off when the provider rejected a
// call the limiter had granted: the declaration was wrong.
func (a *Activities) observe(call connector.Call, status int, h http.Header, err error) {
	if call.Kind != connector.CallData {
		return
	}
	// UPBIT says what is left of its current second. The limiter keeps
	// the declared rate whatever it says (the declaration is the budget,
	// and a 429 still backs the scope off); the value is exported so an
	// operator can see how close the declaration runs to the provider's.
	if v := h.Get("Remaining-Req"); v != "" {
		if rr, perr := upbit.ParseRemainingReq(v); perr == nil {
			a.cfg.Metrics.RemainingRequests(call.Provider, rr.Group, rr.Sec)
		}
	}
	outcome := "ok"
	class, classified := connector.ClassOf(err)
	if classified {
		outcome = class.String()
	} else if err != nil {
		outcome = "error"
	}
	scopes := a.cfg.Registry.ScopesFor(call.Dataset)
	for _, s := range scopes {
		a.cfg.Metrics.Call(call.Provider, s.ID, outcome)
	}
	if !classified || (class != connector.RateLimited && class != connector.Blocked) {
		return
	}
	var ce *connector.Error
	errors.As(err, &ce)
	retryAfter := ce.RetryAfter
	if class == connector.Blocked && !ce.Until.IsZero() {
		retryAfter = time.Until(ce.Until)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range scopes {
		resp, perr := a.cfg.Limiter.Penalize(ctx, s.ID, a.limits[s.ID], retryAfter, ce.Code)
		if perr != nil {
			a.log.Error("backing off scope", "scope", s.ID, "err", perr)
			continue
		}
		a.cfg.Metrics.Backoff(s.ID, resp.Factor)
		declared := a.limits[s.ID]
		a.event(ctx, events.Event{
			Kind: events.KindBackoff, Scope: s.ID, Provider: call.Provider, Dataset: call.Dataset,
			Message: fmt.Sprintf("provider answered %s (%s) within the declared limits: rate lowered from %.3g× to %.3g× of the declaration",
				class, ce.Code, resp.Previous, resp.Factor),
			Attrs: map[string]string{
				"declared":    describeLimits(declared),
				"observed":    fmt.Sprintf("%s %s at HTTP %d", class, ce.Code, status),
				"factor":      fmt.Sprintf("%.4g", resp.Factor),
				"retry_after": retryAfter.String(),
			},
		})
	}
}

func describeLimits(l ratelimit.Limits) string {
	s := ""
	for _, w := range l.Windows {
		s += fmt.Sprintf("%d/%s ", w.Count, w.Length)
	}
	if l.MinInterval > 0 {
		s += fmt.Sprintf("min-interval %s ", l.MinInterval)
	}
	if l.DailyQuota > 0 {
		s += fmt.Sprintf("%d/day ", l.DailyQuota)
	}
	if s == "" {
		return "none"
	}
	return s[:len(s)-1]
}

func (a *Activities) event(ctx context.Context, e events.Event) {
	a.log.Warn(e.Kind, "scope", e.Scope, "provider", e.Provider, "dataset", e.Dataset, "msg", e.Message)
	a.cfg.Metrics.Event(e.Kind)
	if err := a.cfg.Events.Record(ctx, e); err != nil {
		a.log.Error("recording event", "kind", e.Kind, "err", err)
	}
}

// heartbeat returns a function that records an activity heartbeat, or nil
// outside an activity.
func heartbeat(ctx context.Context) func() {
	if !activity.IsActivity(ctx) {
		return nil
	}
	return func() { activity.RecordHeartbeat(ctx) }
}
