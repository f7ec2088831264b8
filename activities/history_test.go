package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/connector"
)

// hiddenError shows a clean message but wraps one that holds a secret, as
// a redacting wrapper that still unwraps to the original did.
type hiddenError struct{ inner error }

func (e hiddenError) Error() string { return "transport failed" }
func (e hiddenError) Unwrap() error { return e.inner }

// TestTemporalErrorRecordsNoSecret: whatever the error unwraps to, the
// failure Temporal's converter builds from temporalError's answer (what the
// workflow history keeps) holds no secret, for every class, and the retry
// decision is unchanged.
func TestTemporalErrorRecordsNoSecret(t *testing.T) {
	const canary = "canary0fred1key2abcdef0123456789"
	a := &Activities{}
	inner := fmt.Errorf(`malformed HTTP status code "/fred/series/observations?api_key=%s"`, canary)
	for _, class := range []connector.Class{connector.AuthFailed, connector.BadRequest, connector.RateLimited,
		connector.Blocked, connector.QuotaExhausted, connector.Transient} {
		ce := &connector.Error{Class: class, Provider: "fred", Dataset: "fred-dgs10", Message: "sending request",
			Err: hiddenError{inner}, RetryAfter: 3 * time.Second, ResetAt: time.Now().Add(10 * time.Minute)}
		for _, err := range []error{ce, fmt.Errorf("streaming fred-dgs10 into k: %w", ce),
			// A message that spells a key by name only (no connector knew it).
			&connector.Error{Class: class, Provider: "fred", Message: "echo https://h/p?api_key=" + canary, ResetAt: ce.ResetAt}} {
			got := a.temporalError(context.Background(), err)
			data, merr := proto.Marshal(temporal.GetDefaultFailureConverter().ErrorToFailure(got))
			if merr != nil {
				t.Fatal(merr)
			}
			if strings.Contains(string(data), canary) {
				t.Errorf("%s: the recorded failure holds the key:\n%s", class, data)
			}
			// A quota is waited for by the workflow (ratelimit.QuotaWaiter),
			// never by retrying the activity.
			wantNonRetryable := !class.Retryable() || class == connector.QuotaExhausted
			var app *temporal.ApplicationError
			if !errors.As(got, &app) || app.Type() != class.String() || app.NonRetryable() != wantNonRetryable {
				t.Errorf("%s: classified as %v", class, got)
			}
		}
	}
}
