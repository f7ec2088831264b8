package store

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/redact"
	"github.com/sluicehq/sluice/notify"
	"github.com/sluicehq/sluice/watch"
)

// redacting is a Store over a database whose DSN holds a password: every
// error it returns is cut from any cause showing the password
// (redact.Error), as a driver may echo its connection string, and the
// store's errors reach logs and Temporal history.
type redacting struct {
	s       Store
	secrets []string
}

func (r *redacting) err(err error) error { return redact.Error(err, r.secrets...) }

func (r *redacting) Observe(ctx context.Context, p watch.Probe, cfg watch.Config) (watch.Result, error) {
	res, err := r.s.Observe(ctx, p, cfg)
	return res, r.err(err)
}

func (r *redacting) AddChanges(ctx context.Context, changes ...watch.Change) ([]watch.Change, error) {
	out, err := r.s.AddChanges(ctx, changes...)
	return out, r.err(err)
}

func (r *redacting) AddEvents(ctx context.Context, events ...watch.Event) error {
	return r.err(r.s.AddEvents(ctx, events...))
}

func (r *redacting) States(ctx context.Context, now time.Time, datasets ...string) ([]watch.DatasetState, error) {
	out, err := r.s.States(ctx, now, datasets...)
	return out, r.err(err)
}

func (r *redacting) Changes(ctx context.Context, f ChangeFilter) ([]watch.Change, error) {
	out, err := r.s.Changes(ctx, f)
	return out, r.err(err)
}

func (r *redacting) Probes(ctx context.Context, f ProbeFilter) ([]watch.Probe, error) {
	out, err := r.s.Probes(ctx, f)
	return out, r.err(err)
}

func (r *redacting) Events(ctx context.Context, f EventFilter) ([]watch.Event, error) {
	out, err := r.s.Events(ctx, f)
	return out, r.err(err)
}

func (r *redacting) Uptime(ctx context.Context, q UptimeQuery) ([]watch.DatasetUptime, error) {
	out, err := r.s.Uptime(ctx, q)
	return out, r.err(err)
}

func (r *redacting) History(ctx context.Context, f HistoryFilter) (History, error) {
	out, err := r.s.History(ctx, f)
	return out, r.err(err)
}

func (r *redacting) AddMaintenance(ctx context.Context, w notify.Window) (notify.Window, error) {
	out, err := r.s.AddMaintenance(ctx, w)
	return out, r.err(err)
}

func (r *redacting) Maintenance(ctx context.Context, endingAfter time.Time) ([]notify.Window, error) {
	out, err := r.s.Maintenance(ctx, endingAfter)
	return out, r.err(err)
}

func (r *redacting) EndMaintenance(ctx context.Context, id string, at time.Time) (notify.Window, error) {
	out, err := r.s.EndMaintenance(ctx, id, at)
	return out, r.err(err)
}

func (r *redacting) Compact(ctx context.Context, now time.Time) (Compacted, error) {
	out, err := r.s.Compact(ctx, now)
	return out, r.err(err)
}

func (r *redacting) Close() error { return r.err(r.s.Close()) }
