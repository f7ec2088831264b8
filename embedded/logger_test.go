package embedded

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"go.temporal.io/server/common/log/tag"
)

// TestServerLoggerKeepsRoutineWarningsOffTheConsole: the server's warning
// about a trailer of its own system workflow (printed on the console of a
// fresh make run) is logged at info; any other warning stays a warning.
func TestServerLoggerKeepsRoutineWarningsOffTheConsole(t *testing.T) {
	var buf bytes.Buffer
	l := serverLogger{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.Warn("TrailerToContextMetadataInterceptor: Trailer had metadata but context not wrapped", tag.NewStringTag("trailer", "map[workflow-type:temporal-sys-worker-deployment-version-workflow]"))
	l.Warn("persistence is slow")
	out := buf.String()
	if !strings.Contains(out, `level=INFO msg="TrailerToContextMetadataInterceptor`) {
		t.Errorf("the trailer warning is not at info:\n%s", out)
	}
	if !strings.Contains(out, `level=WARN msg="persistence is slow"`) {
		t.Errorf("another warning is not at warn:\n%s", out)
	}
}
