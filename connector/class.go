package connector

import "fmt"

// Class is the shared classification of a provider call's outcome, decided
// at the provider boundary so that retry, backoff and outage accounting
// never parse provider-specific codes.
type Class int

// The classes. The zero value is not a class; ClassOf never returns it for
// an *Error built by a connector.
const (
	// RateLimited: the provider throttled the caller for a short while
	// (KIS EGW00201, ECOS ERROR-602, FRED 429, UPBIT 429, data.go.kr 23,
	// KIS token EGW00133). Error.RetryAfter says how long to wait.
	RateLimited Class = iota + 1
	// QuotaExhausted: a daily quota is used up (data.go.kr 22).
	// Error.ResetAt is when it resets.
	QuotaExhausted
	// Blocked: the caller is blocked for a growing time (UPBIT 418).
	// Error.Until is when the block is expected to lift.
	Blocked
	// AuthFailed: the credentials are missing, wrong, expired or not
	// allowed (data.go.kr 20/29/30/31/32, ECOS INFO-100, FRED 400 api_key,
	// UPBIT 401, KIS token refused). A person must act.
	AuthFailed
	// NoData: the provider answered and the request was well formed, but
	// there are no rows (ECOS INFO-200, data.go.kr 03, an empty array).
	NoData
	// BadRequest: the provider refused the request itself (non-retryable
	// 4xx, parameter errors); sending it again will not help.
	BadRequest
	// Transient: anything that may succeed when tried again (5xx,
	// timeouts, truncated bodies, connection resets, unknown answers).
	Transient
)

var classNames = map[Class]string{
	RateLimited:    "rate_limited",
	QuotaExhausted: "quota_exhausted",
	Blocked:        "blocked",
	AuthFailed:     "auth_failed",
	NoData:         "no_data",
	BadRequest:     "bad_request",
	Transient:      "transient",
}

// String returns the class in snake case, e.g. "rate_limited"; it is the
// stable name used in logs, metrics and activity error types.
func (c Class) String() string {
	if s, ok := classNames[c]; ok {
		return s
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// ParseClass returns the class whose String is s.
func ParseClass(s string) (Class, error) {
	for c, name := range classNames {
		if name == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("parsing connector class: unknown class %q (known: rate_limited, quota_exhausted, blocked, auth_failed, no_data, bad_request, transient)", s)
}

// Retryable reports whether a call that failed with this class may succeed
// when sent again later: RateLimited, QuotaExhausted, Blocked and Transient
// are (after the wait the Error names); AuthFailed, NoData and BadRequest
// are not. An unknown class counts as Transient.
func (c Class) Retryable() bool {
	switch c {
	case AuthFailed, NoData, BadRequest:
		return false
	}
	return true
}
