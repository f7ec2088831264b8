package events

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRecorderAlso: every event also reaches the second destination, with
// its time set, and that destination's failure is reported.
func TestRecorderAlso(t *testing.T) {
	var got []Event
	r := NewRecorder(nil, "sluice").Also(func(_ context.Context, e Event) error {
		got = append(got, e)
		if e.Kind == KindQuotaExhausted {
			return errors.New("database is locked")
		}
		return nil
	})
	if err := r.Record(context.Background(), Event{Kind: KindBackoff, Scope: "kis/key", Message: "backed off"}); err != nil {
		t.Fatal(err)
	}
	err := r.Record(context.Background(), Event{Kind: KindQuotaExhausted, Scope: "upbit/ip"})
	if err == nil || !strings.Contains(err.Error(), "watch store") {
		t.Errorf("a failing destination: %v", err)
	}
	if len(got) != 2 || got[0].Kind != KindBackoff || got[0].At.IsZero() || got[0].Scope != "kis/key" {
		t.Errorf("passed on %+v", got)
	}
	var nilRecorder *Recorder
	if err := nilRecorder.Record(context.Background(), Event{Kind: KindBackoff}); err != nil {
		t.Errorf("nil recorder: %v", err)
	}
}
