// Package activities holds Sluice's Temporal activities: Ingest (fetch →
// zstd → lake as one stream, returning metadata only), Probe (the cheapest
// request that proves a dataset answers, recorded in the watch store) and
// Revisions (a landed object's rows compared with the dataset's previous
// object). Every provider call passes the rate-limit gate of its scope
// instances first (ratelimit.Gate).
package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/lineage"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/notify"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch/store"
)

// Config is what the activities need. Registry, Sink and Gate are
// required.
type Config struct {
	Registry *registry.Registry
	Sink     sink.Sink
	// Gate holds every provider call to its scopes' limits and reports
	// rejections (the rate-limit policy lives in package ratelimit).
	Gate    *ratelimit.Gate
	Metrics *metrics.Metrics // nil: no metrics
	Logger  *slog.Logger     // nil: slog.Default()
	// BaseURLs overrides provider base URLs by provider id (the
	// simulator); "*" applies to every provider.
	BaseURLs map[string]string
	// Credentials looks up credentials by environment variable name (nil:
	// the environment, or NAME_FILE).
	Credentials connector.Credentials
	// TokenStore keeps KIS tokens across processes (nil: the connector's
	// file store).
	TokenStore connector.TokenStore
	// Watch is the watch store: probes are recorded in it and revisions
	// compared against it (nil: probes are classified but not recorded,
	// and no revision is looked for).
	Watch store.Store
	// RateScale is the rate scale the gate runs at (--rate-scale): the
	// watch's clock runs at it too (watch.Config.Scaled); ≤ 0 means 1.
	RateScale float64
	// Events receives the operational events the activities report
	// themselves (a KIS token issued: events.KindTokenRefreshed); nil:
	// they are only logged by the connector.
	Events *events.Emitter
	// Lineage receives an OpenLineage START and a COMPLETE or FAIL for
	// every Ingest attempt that gets as far as asking the provider (nil:
	// none). Emitting never holds nor fails the ingest.
	Lineage *lineage.Emitter
	// LineageLake names the lake in lineage events' outputs
	// (lineage.S3Lake, lineage.LocalLake).
	LineageLake lineage.Lake
	// LineageNamespace is the lineage events' job namespace (""
	// lineage.DefaultNamespace).
	LineageNamespace string
	// Notify is the notifications' sinks NotifyDeliver writes to (nil:
	// none).
	Notify *notify.Config
	// Notifier receives the changes the probes confirm, less those a
	// maintenance window silences (nil: nobody is told).
	Notifier Notifier
}

// Activities are the activity methods, holding their clients. Safe for
// concurrent use.
type Activities struct {
	cfg        Config
	log        *slog.Logger
	connectors map[string]connector.Connector
	now        func() time.Time // the watch's clock; nil: time.Now
	sender     notify.Sender
}

// tokenIssued returns the hook that records a newly issued token as a
// token.refreshed event: the provider, when, the expiry and why, never
// the token nor the key it was issued for.
func tokenIssued(em *events.Emitter) func(context.Context, connector.TokenIssue) {
	if em == nil {
		return nil
	}
	return func(ctx context.Context, t connector.TokenIssue) {
		em.Emit(ctx, events.Event{
			Kind:     events.KindTokenRefreshed,
			At:       t.IssuedAt.UTC(),
			Provider: t.Provider,
			Message:  fmt.Sprintf("a new %s access token was issued, valid until %s", t.Provider, t.ExpiresAt.UTC().Format(time.RFC3339)),
			Attrs: map[string]string{
				"issued_at":  t.IssuedAt.UTC().Format(time.RFC3339),
				"expires_at": t.ExpiresAt.UTC().Format(time.RFC3339),
				"reason":     t.Reason,
			},
		})
	}
}

// New builds the activities and a connector per provider.
func New(cfg Config) (*Activities, error) {
	if cfg.Registry == nil || cfg.Sink == nil || cfg.Gate == nil {
		return nil, errors.New("creating activities: registry, sink and rate-limit gate are required")
	}
	a := &Activities{cfg: cfg, log: cfg.Logger, connectors: map[string]connector.Connector{}}
	if a.log == nil {
		a.log = slog.Default()
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
			Limiter:     probeLimiter{cfg.Gate},
			TokenIssued: tokenIssued(cfg.Events),
		})
		if err != nil {
			return nil, fmt.Errorf("creating activities: %w", err)
		}
		a.connectors[p.ID] = c
	}
	return a, nil
}

// WarmTokens has the connectors of providers (every provider when empty)
// that call with an access token obtain it now (connector.TokenWarmer), so
// that a batch about to start makes its first calls without waiting for a
// token endpoint. It is a function, not a method: every method of
// Activities is an activity.
func WarmTokens(ctx context.Context, a *Activities, providers []string) error {
	var errs []error
	for _, p := range a.cfg.Registry.Providers {
		if len(providers) > 0 && !slices.Contains(providers, p.ID) {
			continue
		}
		if w, ok := a.connectors[p.ID].(connector.TokenWarmer); ok {
			if err := w.WarmToken(ctx); err != nil {
				errs = append(errs, fmt.Errorf("warming the %s token: %w", p.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}
