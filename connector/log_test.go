package connector_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
)

func newLogger(l *connectortest.Log) *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type stringer string

func (s stringer) String() string { return string(s) }

func TestRedactingHandler(t *testing.T) {
	log := &connectortest.Log{}
	var sec connector.Secrets
	sec.Add("supersecretvalue")
	lg := slog.New(connector.NewRedactingHandler(newLogger(log).Handler(), &sec))
	lg = lg.With("bound", "x supersecretvalue")
	lg.WithGroup("g").Info("msg supersecretvalue",
		"s", "supersecretvalue", "err", errors.New("e supersecretvalue"), "str", stringer("supersecretvalue"),
		slog.Group("inner", "v", "supersecretvalue"), "bytes", []byte("supersecretvalue"), "n", 3)
	out := log.String()
	if strings.Contains(out, "supersecretvalue") {
		t.Fatalf("secret leaked: %s", out)
	}
	if strings.Count(out, "REDACTED") != 7 || !strings.Contains(out, `"n":3`) {
		t.Errorf("unexpected log: %s", out)
	}
}
