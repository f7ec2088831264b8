package main

import (
	"context"
	"errors"
	"log/slog"

	"go.temporal.io/sdk/log"
)

// temporalLogger adapts slog for the Temporal SDK, one level quieter: the
// SDK's info lines are debug for a Sluice user, and its "Activity error."
// line for each failed attempt is info: an attempt that a retry follows
// is nothing a user must act on (a transient answer retried and then
// ingested), and an activity that fails for good is reported by Sluice
// itself (the run's summary, the workflow's error).
func temporalLogger(l *slog.Logger) log.Logger {
	return log.NewStructuredLogger(slog.New(quieter{l.Handler()}))
}

// activityError is the message of the SDK's line for a failed activity
// attempt.
const activityError = "Activity error."

// heartbeatError is the message of the SDK's line for a heartbeat it could
// not record. With a cancelled context it is a heartbeat the SDK buffered
// and sent as its attempt ended (the attempt's context is cancelled then):
// info, like activityError. Any other error stays a warning.
const heartbeatError = "RecordActivityHeartbeat with error"

type quieter struct{ slog.Handler }

func (q quieter) Enabled(ctx context.Context, lvl slog.Level) bool {
	if lvl == slog.LevelInfo {
		lvl = slog.LevelDebug
	}
	return q.Handler.Enabled(ctx, lvl)
}

func (q quieter) Handle(ctx context.Context, r slog.Record) error {
	switch {
	case r.Level == slog.LevelInfo:
		r.Level = slog.LevelDebug
	case r.Level > slog.LevelInfo && (r.Message == activityError || r.Message == heartbeatError && cancelled(r)):
		r.Level = slog.LevelInfo
		if !q.Handler.Enabled(ctx, r.Level) {
			return nil
		}
	}
	return q.Handler.Handle(ctx, r)
}

// cancelled reports whether a record's Error attribute is a cancelled
// context (an error, or its text).
func cancelled(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "Error" {
			err, ok := a.Value.Any().(error)
			found = ok && errors.Is(err, context.Canceled) || a.Value.String() == context.Canceled.Error()
			return false
		}
		return true
	})
	return found
}

func (q quieter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quieter{q.Handler.WithAttrs(attrs)}
}

func (q quieter) WithGroup(name string) slog.Handler { return quieter{q.Handler.WithGroup(name)} }
