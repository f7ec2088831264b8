package embedded

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestPollFrontendUntilReady: pollFrontend calls ready again until it
// answers nil, and, when the wait ends first, says what it waited for,
// on which frontend, and ready's last error.
func TestPollFrontendUntilReady(t *testing.T) {
	// grpc.NewClient connects lazily: nothing need listen there.
	const frontend = "127.0.0.1:1"
	calls := 0
	err := pollFrontend(context.Background(), frontend, insecure.NewCredentials(), 1, "namespace \"x\"",
		func(ctx context.Context, conn *grpc.ClientConn) error {
			if conn == nil || ctx.Err() != nil {
				t.Errorf("call %d: conn %v, ctx error %v", calls, conn, ctx.Err())
			}
			if calls++; calls < 3 {
				return errors.New("not yet")
			}
			return nil
		})
	if err != nil || calls != 3 {
		t.Fatalf("pollFrontend = %v after %d calls, want nil after 3", err, calls)
	}

	ctx, cancel := context.WithCancel(context.Background())
	err = pollFrontend(ctx, frontend, insecure.NewCredentials(), 1, "the cluster membership",
		func(context.Context, *grpc.ClientConn) error {
			cancel()
			return errors.New("missing [history]")
		})
	want := "waiting for the cluster membership on Temporal frontend 127.0.0.1:1: context canceled (last error: missing [history])"
	if err == nil || err.Error() != want || !errors.Is(err, context.Canceled) {
		t.Fatalf("pollFrontend after cancel = %v, want %q wrapping context.Canceled", err, want)
	}
}
