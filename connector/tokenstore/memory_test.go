package tokenstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
)

func TestMemoryKeepsTokensAndLocksPerKey(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	if _, ok, err := m.Load(ctx, "app"); ok || err != nil {
		t.Fatalf("Load on an empty store = %v, %v", ok, err)
	}
	tok := connector.Token{AccessToken: "t1", ExpiresAt: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}
	if err := m.Save(ctx, "app", tok); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := m.Load(ctx, "app"); !ok || err != nil || got != tok {
		t.Fatalf("Load = %+v, %v, %v; want %+v", got, ok, err, tok)
	}
	if _, _, err := m.Load(ctx, "../x"); err == nil {
		t.Error("Load accepted the key ../x")
	}

	// While one caller holds "app", another waits (here: gives up with its
	// context); "other" is free; once released, "app" is taken again.
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- m.WithLock(ctx, "app", func(context.Context) error { close(held); <-release; return nil })
	}()
	<-held
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	ran := false
	err := m.WithLock(cancelled, "app", func(context.Context) error { ran = true; return nil })
	if !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("WithLock on a held key = %v (ran %v), want context.Canceled without running", err, ran)
	}
	if err := m.WithLock(ctx, "other", func(context.Context) error { return nil }); err != nil {
		t.Fatalf("WithLock on a free key: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := errors.New("fn's error")
	if err := m.WithLock(ctx, "app", func(context.Context) error { return want }); err != want {
		t.Fatalf("WithLock after release = %v, want fn's error", err)
	}
}
