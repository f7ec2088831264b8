// Package heartbeat keeps a Temporal activity's heartbeat going while it
// waits or streams, so that a worker that dies mid-call is noticed within
// the activity's heartbeat timeout. Outside an activity it does nothing.
package heartbeat

import (
	"context"
	"io"
	"time"

	"go.temporal.io/sdk/activity"
)

// Every records an activity heartbeat every interval until the returned
// function is called or ctx is done. Outside an activity it starts
// nothing and the returned function does nothing.
func Every(ctx context.Context, interval time.Duration) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// Reader returns r recording an activity heartbeat at most once a second
// while it is read, so a long body keeps its activity alive. Outside an
// activity it returns r itself.
func Reader(ctx context.Context, r io.Reader) io.Reader {
	if !activity.IsActivity(ctx) {
		return r
	}
	return &reader{r: r, beat: func() { activity.RecordHeartbeat(ctx) }}
}

// reader is Reader's heartbeating reader.
type reader struct {
	r    io.Reader
	beat func()
	last time.Time
}

func (h *reader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if now := time.Now(); now.Sub(h.last) >= time.Second {
		h.last = now
		h.beat()
	}
	return n, err
}
