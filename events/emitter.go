package events

import (
	"context"
	"log/slog"

	"github.com/sluicehq/sluice/metrics"
)

// Emitter is how a worker's activities report an operational event: a
// log line, the event counter, and the record in the events workflow.
// Safe for concurrent use.
type Emitter struct {
	recorder *Recorder
	metrics  *metrics.Metrics
	log      *slog.Logger
}

// NewEmitter returns an emitter; any of its parts may be nil (a nil
// logger means slog.Default()).
func NewEmitter(r *Recorder, m *metrics.Metrics, log *slog.Logger) *Emitter {
	if log == nil {
		log = slog.Default()
	}
	return &Emitter{recorder: r, metrics: m, log: log}
}

// Emit logs, counts and records e. A failure to record is logged, never
// returned: an event must not fail the call that caused it.
func (em *Emitter) Emit(ctx context.Context, e Event) {
	if em == nil {
		return
	}
	level := slog.LevelWarn
	if e.Kind == KindTokenRefreshed {
		level = slog.LevelInfo // routine, not a warning
	}
	em.log.Log(ctx, level, e.Kind, "scope", e.Scope, "provider", e.Provider, "dataset", e.Dataset, "msg", e.Message)
	em.metrics.Event(e.Kind)
	if err := em.recorder.Record(ctx, e); err != nil {
		em.log.Error("recording event", "kind", e.Kind, "err", err)
	}
}
