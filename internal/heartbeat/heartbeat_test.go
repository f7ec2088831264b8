package heartbeat_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/sluicehq/sluice/internal/heartbeat"
)

// TestOutsideAnActivity: outside an activity nothing beats and the reader
// is the one given.
func TestOutsideAnActivity(t *testing.T) {
	stop := heartbeat.Every(context.Background(), time.Millisecond)
	stop()
	r := strings.NewReader("x")
	if got := heartbeat.Reader(context.Background(), r); got != io.Reader(r) {
		t.Errorf("Reader outside an activity wrapped %T", got)
	}
}

// inActivity runs f as an activity and returns what it returned and how
// many heartbeats reached the (simulated) server; the SDK batches them, so
// only whether there was one tells.
func inActivity(t *testing.T, f func(ctx context.Context) (string, error)) (string, int32) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	var beats atomic.Int32
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats.Add(1) })
	env.RegisterActivityWithOptions(f, activity.RegisterOptions{Name: "Beat"})
	v, err := env.ExecuteActivity("Beat")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := v.Get(&got); err != nil {
		t.Fatal(err)
	}
	return got, beats.Load()
}

// TestEveryBeats: inside an activity Every beats until stopped.
func TestEveryBeats(t *testing.T) {
	_, beats := inActivity(t, func(ctx context.Context) (string, error) {
		stop := heartbeat.Every(ctx, 5*time.Millisecond)
		time.Sleep(50 * time.Millisecond)
		stop()
		return "", nil
	})
	if beats == 0 {
		t.Error("no heartbeat from Every")
	}
}

// TestReaderBeats: inside an activity Reader beats while it is read and
// passes the bytes through.
func TestReaderBeats(t *testing.T) {
	got, beats := inActivity(t, func(ctx context.Context) (string, error) {
		var buf bytes.Buffer
		_, err := io.Copy(&buf, heartbeat.Reader(ctx, strings.NewReader("body")))
		return buf.String(), err
	})
	if got != "body" {
		t.Errorf("read %q through Reader, want body", got)
	}
	if beats == 0 {
		t.Error("no heartbeat from Reader")
	}
}
