package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/connector"
)

// Outcome is the class of a probe's result, as the watch counts it.
type Outcome string

// The outcomes. RateLimited and Throttled are operational: they never
// count towards an outage (Outcome.Operational).
const (
	// OK: the provider answered with data.
	OK Outcome = "ok"
	// NoData: the provider answered, well formed, with no rows in the
	// probe's window. The endpoint is up; the late-data detector judges
	// whether the data stopped coming.
	NoData Outcome = "no_data"
	// ProviderError: the provider answered with an error (5xx, an error
	// envelope, a request it now refuses).
	ProviderError Outcome = "provider_error"
	// AuthFailed: the provider refused the credentials. The dataset is
	// unavailable to Sluice and a person must act.
	AuthFailed Outcome = "auth_failed"
	// RateLimited: the provider rate-limited us (429, EGW00201,
	// ERROR-602, data.go.kr 22/23, UPBIT 418). Operational, never an
	// outage: the provider answered.
	RateLimited Outcome = "rate_limited"
	// Throttled: our own limiter or daily quota kept the probe from
	// running. Operational, never an outage: nobody asked the provider.
	Throttled Outcome = "throttled"
	// Network: no answer arrived (connection refused or reset, DNS,
	// TLS, timeout).
	Network Outcome = "network"
)

// Outcomes lists every outcome in a stable order.
var Outcomes = []Outcome{OK, NoData, ProviderError, AuthFailed, RateLimited, Throttled, Network}

// Valid reports whether o is one of the outcomes.
func (o Outcome) Valid() bool { return slices.Contains(Outcomes, o) }

// Operational reports whether the outcome is an operational event rather
// than evidence about the provider's availability: our own throttling or
// the provider's rate-limit answer.
func (o Outcome) Operational() bool { return o == RateLimited || o == Throttled }

// Good reports whether the outcome proves the dataset answers: OK or
// NoData.
func (o Outcome) Good() bool { return o == OK || o == NoData }

// Bad reports whether the outcome is evidence of an outage: a provider
// error, refused credentials or no answer at all.
func (o Outcome) Bad() bool { return o == ProviderError || o == AuthFailed || o == Network }

// ParseOutcome returns the outcome named s.
func ParseOutcome(s string) (Outcome, error) {
	if o := Outcome(s); o.Valid() {
		return o, nil
	}
	names := make([]string, len(Outcomes))
	for i, o := range Outcomes {
		names[i] = string(o)
	}
	return "", fmt.Errorf("parsing probe outcome: unknown outcome %q (known: %s)", s, strings.Join(names, ", "))
}

// OwnCodePrefix starts the connector.Error codes that Sluice itself
// produces rather than a provider: "sluice-quota" is the limiter's
// exhausted daily quota (activities.gate). A classified error with such a
// code never reached the provider.
const OwnCodePrefix = "sluice-"

// ErrNotSent marks a probe that our own limiter or quota kept from being
// sent; wrap a gate's error with NotSent so that ClassifyError counts it
// as Throttled and never as an outage.
var ErrNotSent = errors.New("probe not sent: held back by Sluice's own limiter or quota")

type notSent struct{ err error }

func (e notSent) Error() string        { return "not sent: " + e.err.Error() }
func (e notSent) Unwrap() error        { return e.err }
func (e notSent) Is(target error) bool { return target == ErrNotSent }

// NotSent wraps err (a rate-limiter gate's failure) so that ClassifyError
// returns Throttled for it. NotSent(nil) is nil.
func NotSent(err error) error {
	if err == nil {
		return nil
	}
	return notSent{err}
}

// ClassifyError maps a connector's Probe result onto an outcome and the
// HTTP status it carried (0 when no answer arrived):
//
//   - nil: OK;
//   - marked NotSent, or a connector.Error whose code starts with
//     OwnCodePrefix: Throttled;
//   - connector classes: NoData → NoData, AuthFailed → AuthFailed,
//     RateLimited and Blocked and a provider's QuotaExhausted →
//     RateLimited, BadRequest → ProviderError, Transient → ProviderError
//     when an HTTP status came back, else Network;
//   - a context deadline or cancellation: Network (no answer in time);
//   - anything else: ProviderError.
func ClassifyError(err error) (Outcome, int) {
	if err == nil {
		return OK, 0
	}
	if errors.Is(err, ErrNotSent) {
		return Throttled, 0
	}
	var ce *connector.Error
	if errors.As(err, &ce) {
		if strings.HasPrefix(ce.Code, OwnCodePrefix) {
			return Throttled, 0
		}
		switch ce.Class {
		case connector.NoData:
			return NoData, ce.Status
		case connector.AuthFailed:
			return AuthFailed, ce.Status
		case connector.RateLimited, connector.Blocked, connector.QuotaExhausted:
			return RateLimited, ce.Status
		case connector.BadRequest:
			return ProviderError, ce.Status
		default: // Transient and anything unknown
			if ce.Status == 0 {
				return Network, 0
			}
			return ProviderError, ce.Status
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return Network, 0
	}
	return ProviderError, 0
}
