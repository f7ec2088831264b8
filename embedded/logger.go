package embedded

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/sluicehq/sluice/internal/redact"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// levelHandler passes records at or above a changeable level to the wrapped
// handler. It lets Stop quieten the server's routine shutdown warnings.
type levelHandler struct {
	level *slog.LevelVar
	next  slog.Handler
}

func (h levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level.Level() && h.next.Enabled(ctx, l)
}

func (h levelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{level: h.level, next: h.next.WithAttrs(attrs)}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{level: h.level, next: h.next.WithGroup(name)}
}

// redactHandler replaces secrets (the database password) in a record's
// message and attribute values before passing it on.
type redactHandler struct {
	secrets []string
	next    slog.Handler
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, r slog.Record) error {
	if len(h.secrets) == 0 {
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, redact.Values(r.Message, h.secrets...), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// attr returns a with its value redacted; a value whose text shows no
// secret is kept as it is.
func (h redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		group := v.Group()
		out := make([]any, len(group))
		for i, g := range group {
			out[i] = h.attr(g)
		}
		return slog.Group(a.Key, out...)
	}
	text := v.String()
	if red := redact.Values(text, h.secrets...); red != text {
		return slog.String(a.Key, red)
	}
	return a
}

func (h redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = h.attr(a)
	}
	return redactHandler{secrets: h.secrets, next: h.next.WithAttrs(out)}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{secrets: h.secrets, next: h.next.WithGroup(name)}
}

// serverLogger adapts a slog.Logger to the Temporal server's log.Logger.
// DPanic logs at error level; Panic and Fatal log at error level and then
// panic, so the embedded server never exits the process by itself — except
// once the server is stopping (stopped set), when they end only their own
// goroutine: a service still starting when Stop came (a ringpop join whose
// context Stop cancelled) reports that as fatal, and it must not take the
// process down after the server stopped.
type serverLogger struct {
	log     *slog.Logger
	stopped *atomic.Bool
}

var (
	_ log.Logger     = serverLogger{}
	_ log.WithLogger = serverLogger{}
)

func (l serverLogger) Debug(msg string, tags ...tag.Tag) { l.emit(slog.LevelDebug, msg, tags) }
func (l serverLogger) Info(msg string, tags ...tag.Tag)  { l.emit(slog.LevelInfo, msg, tags) }
func (l serverLogger) Warn(msg string, tags ...tag.Tag) {
	level := slog.LevelWarn
	if strings.HasPrefix(msg, routineWarning) {
		level = slog.LevelInfo
	}
	l.emit(level, msg, tags)
}

// routineWarning starts a warning the server logs for its own system
// workflows on an ordinary start (a trailer of its internal worker
// deployment workflow that its interceptor has no context for): nothing
// an operator can act on, so it is logged at info, off the console.
const routineWarning = "TrailerToContextMetadataInterceptor: Trailer had metadata but context not wrapped"

func (l serverLogger) Error(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }
func (l serverLogger) DPanic(msg string, tags ...tag.Tag) {
	l.emit(slog.LevelError, msg, tags)
}

func (l serverLogger) Panic(msg string, tags ...tag.Tag) {
	l.fail("temporal server: ", msg, tags)
}

func (l serverLogger) Fatal(msg string, tags ...tag.Tag) {
	l.fail("temporal server (fatal): ", msg, tags)
}

// fail logs msg and panics, or, once the server is stopping, ends the
// calling goroutine.
func (l serverLogger) fail(prefix, msg string, tags []tag.Tag) {
	if l.stopped != nil && l.stopped.Load() {
		l.emit(slog.LevelWarn, msg+" (while stopping)", tags)
		runtime.Goexit()
	}
	l.emit(slog.LevelError, msg, tags)
	panic(prefix + msg)
}

// With returns a logger that adds tags to every record.
func (l serverLogger) With(tags ...tag.Tag) log.Logger {
	return serverLogger{log: slog.New(l.log.Handler().WithAttrs(attrs(tags))), stopped: l.stopped}
}

func (l serverLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return
	}
	l.log.LogAttrs(ctx, level, msg, attrs(tags)...)
}

func attrs(tags []tag.Tag) []slog.Attr {
	out := make([]slog.Attr, len(tags))
	for i, t := range tags {
		out[i] = slog.Any(t.Key(), t.Value())
	}
	return out
}
