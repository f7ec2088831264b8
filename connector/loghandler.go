package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// RedactingHandler wraps a slog.Handler so that every known secret is
// redacted from the message and from string, error and Stringer attribute
// values before the record reaches the wrapped handler. Connectors log
// through it; it is a second line of defence behind building redacted
// messages in the first place.
type RedactingHandler struct {
	inner   slog.Handler
	secrets *Secrets
}

// NewRedactingHandler returns a handler redacting secrets before inner.
func NewRedactingHandler(inner slog.Handler, secrets *Secrets) *RedactingHandler {
	return &RedactingHandler{inner: inner, secrets: secrets}
}

// Enabled reports whether the wrapped handler handles the level.
func (h *RedactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

// Handle redacts the record and passes it on.
func (h *RedactingHandler) Handle(ctx context.Context, r slog.Record) error {
	sec := h.secrets.Values()
	out := slog.NewRecord(r.Time, r.Level, Redact(r.Message, sec...), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a, sec))
		return true
	})
	return h.inner.Handle(ctx, out)
}

// WithAttrs redacts the attributes (with the secrets known now) and
// returns a handler carrying them.
func (h *RedactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	sec := h.secrets.Values()
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = redactAttr(a, sec)
	}
	return &RedactingHandler{inner: h.inner.WithAttrs(red), secrets: h.secrets}
}

// WithGroup returns a handler that nests later attributes in a group.
func (h *RedactingHandler) WithGroup(name string) slog.Handler {
	return &RedactingHandler{inner: h.inner.WithGroup(name), secrets: h.secrets}
}

func redactAttr(a slog.Attr, sec []string) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Redact(v.String(), sec...))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = redactAttr(ga, sec)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.Any(a.Key, errors.New(Redact(x.Error(), sec...)))
		case fmt.Stringer:
			return slog.String(a.Key, Redact(x.String(), sec...))
		case []byte:
			return slog.String(a.Key, Redact(string(x), sec...))
		default:
			return slog.String(a.Key, Redact(fmt.Sprint(x), sec...))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
