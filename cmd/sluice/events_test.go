package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestEventsFailsClearlyWhenTemporalIsUnreachable: the "no events yet"
// answer is only for a server that says the events workflow does not
// exist; a server that is not there is an error naming its address.
func TestEventsFailsClearlyWhenTemporalIsUnreachable(t *testing.T) {
	clearTemporalEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := runSluice(ctx, "events", "--temporal", addr)
	if err == nil || !strings.Contains(err.Error(), "connecting to Temporal at "+addr) {
		t.Fatalf("events with no server at %s: %v, want a connection error\n%s", addr, err, out)
	}
	if strings.Contains(out, "no events recorded yet") {
		t.Errorf("an unreachable server reported as no events:\n%s", out)
	}
}
