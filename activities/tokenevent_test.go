package activities

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/events"
)

// TestTokenIssuedIsATokenRefreshedEvent: a token the connector was issued
// becomes a token.refreshed event saying the provider, when, until when
// and why, in UTC.
func TestTokenIssuedIsATokenRefreshedEvent(t *testing.T) {
	var got []events.Event
	rec := events.NewRecorder(nil, "sluice").Also(func(_ context.Context, e events.Event) error {
		got = append(got, e)
		return nil
	})
	kst := time.FixedZone("KST", 9*3600)
	issued := time.Date(2026, 11, 30, 8, 0, 5, 0, kst)
	hook := tokenIssued(events.NewEmitter(rec, nil, slog.New(slog.DiscardHandler)))
	hook(context.Background(), connector.TokenIssue{Provider: "kis", IssuedAt: issued, ExpiresAt: issued.Add(24 * time.Hour), Reason: "expiring"})
	if len(got) != 1 {
		t.Fatalf("%d events recorded, want 1", len(got))
	}
	e := got[0]
	if e.Kind != events.KindTokenRefreshed || e.Provider != "kis" || !e.At.Equal(issued) || e.At.Location() != time.UTC {
		t.Errorf("event %+v", e)
	}
	want := map[string]string{"issued_at": "2026-11-29T23:00:05Z", "expires_at": "2026-11-30T23:00:05Z", "reason": "expiring"}
	if len(e.Attrs) != len(want) {
		t.Errorf("attrs %v, want %v", e.Attrs, want)
	}
	for k, v := range want {
		if e.Attrs[k] != v {
			t.Errorf("attr %s = %q, want %q", k, e.Attrs[k], v)
		}
	}
	if tokenIssued(nil) != nil {
		t.Error("without an emitter the hook should be nil (the connector only logs)")
	}
}
