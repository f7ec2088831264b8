package connector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Error is a classified provider outcome. Connectors build it at the
// provider boundary; Message never holds a secret.
type Error struct {
	Class    Class  // the shared classification of the outcome
	Provider string // registry provider id, e.g. "kis"
	Dataset  string // registry dataset id; empty for token calls
	// Code is the provider's own code: "EGW00201", "ERROR-602", "22",
	// "429", "too_many_requests"; empty when the failure is local (a
	// connection reset, a missing credential).
	Code string
	// Message describes the failure, usually in the provider's words.
	Message string
	// RetryAfter is how long to wait before sending again (RateLimited).
	RetryAfter time.Duration
	// ResetAt is when a daily quota resets (QuotaExhausted).
	ResetAt time.Time
	// Until is when a block is expected to lift (Blocked).
	Until time.Time
	// Status is the HTTP status, 0 when no response arrived.
	Status int
	// Err is the underlying error, if any (redacted of secrets).
	Err error
	// Confirm, set by a classifier, marks an answer whose meaning is
	// disputed in the field (data.go.kr's code 30 during bursts, FRED's
	// intermittent "api_key is not registered"): its Class holds only once
	// Confirm answers of the same class and code came in a row from the
	// provider, with no success between them. Until then Base reports it
	// as Transient with Unconfirmed set (see Base.Fail). 0 or 1: the class
	// is final at once.
	Confirm int
	// Unconfirmed is the class an ambiguous answer (Confirm) will have once
	// confirmed; while it is set, Class is Transient and the call is
	// retried after at least ConfirmWait. Zero for a final class.
	Unconfirmed Class
}

// Error describes the failure: provider, dataset, class, code, status,
// message and the wait it asks for.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.Dataset != "" {
		b.WriteString(" ")
		b.WriteString(e.Dataset)
	}
	b.WriteString(": ")
	b.WriteString(strings.ReplaceAll(e.Class.String(), "_", " "))
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, " [HTTP %d]", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	switch {
	case e.RetryAfter > 0:
		fmt.Fprintf(&b, "; retry after %s", e.RetryAfter)
	case !e.ResetAt.IsZero():
		fmt.Fprintf(&b, "; quota resets at %s", e.ResetAt.Format(time.RFC3339))
	case !e.Until.IsZero():
		fmt.Fprintf(&b, "; blocked until %s", e.Until.Format(time.RFC3339))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Wait returns how long to wait from now before sending again: RetryAfter,
// or the time until ResetAt or Until; 0 when the error names no wait.
func (e *Error) Wait(now time.Time) time.Duration {
	var d time.Duration
	switch {
	case e.RetryAfter > 0:
		d = e.RetryAfter
	case !e.ResetAt.IsZero():
		d = e.ResetAt.Sub(now)
	case !e.Until.IsZero():
		d = e.Until.Sub(now)
	}
	return max(d, 0)
}

// ClassOf returns the class of err and true when err is or wraps an
// *Error. For any other error it returns Transient and false: an
// unclassified failure counts as transient, except a context error (see
// Retryable).
func ClassOf(err error) (Class, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Class, true
	}
	return Transient, false
}

// Retryable reports whether the call that failed with err may succeed when
// sent again (after the wait an *Error names). nil, context.Canceled and
// context.DeadlineExceeded of the caller's context are not retryable;
// unclassified errors are.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	if c, ok := ClassOf(err); ok {
		return c.Retryable()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return true
}

// AsError returns the *Error err is or wraps, or else a Transient *Error
// wrapping err; nil for nil.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Class: Transient, Message: err.Error(), Err: err}
}
