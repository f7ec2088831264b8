package main

import (
	"context"
	"log/slog"

	"go.temporal.io/sdk/log"
)

// temporalLogger adapts slog for the Temporal SDK, one level quieter: the
// SDK's info lines are debug for a Sluice user.
func temporalLogger(l *slog.Logger) log.Logger {
	return log.NewStructuredLogger(slog.New(quieter{l.Handler()}))
}

type quieter struct{ slog.Handler }

func (q quieter) Enabled(ctx context.Context, lvl slog.Level) bool {
	if lvl == slog.LevelInfo {
		lvl = slog.LevelDebug
	}
	return q.Handler.Enabled(ctx, lvl)
}

func (q quieter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	return q.Handler.Handle(ctx, r)
}

func (q quieter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quieter{q.Handler.WithAttrs(attrs)}
}

func (q quieter) WithGroup(name string) slog.Handler { return quieter{q.Handler.WithGroup(name)} }
