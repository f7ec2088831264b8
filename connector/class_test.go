package connector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestClassNamesRoundTrip(t *testing.T) {
	for c := RateLimited; c <= Transient; c++ {
		got, err := ParseClass(c.String())
		if err != nil || got != c {
			t.Errorf("ParseClass(%q) = %v, %v; want %v", c.String(), got, err, c)
		}
	}
	if _, err := ParseClass("nope"); err == nil {
		t.Error("ParseClass(nope) succeeded")
	}
	if s := Class(0).String(); s != "class(0)" {
		t.Errorf("Class(0).String() = %q", s)
	}
}

func TestRetryable(t *testing.T) {
	retry := map[Class]bool{RateLimited: true, QuotaExhausted: true, Blocked: true, Transient: true,
		AuthFailed: false, NoData: false, BadRequest: false}
	for c, want := range retry {
		err := fmt.Errorf("wrapped: %w", &Error{Class: c, Provider: "p"})
		if got := Retryable(err); got != want {
			t.Errorf("Retryable(%v) = %v, want %v", c, got, want)
		}
		if got, ok := ClassOf(err); !ok || got != c {
			t.Errorf("ClassOf(%v) = %v, %v", c, got, ok)
		}
	}
	if Retryable(nil) {
		t.Error("Retryable(nil)")
	}
	if Retryable(context.Canceled) || Retryable(fmt.Errorf("x: %w", context.DeadlineExceeded)) {
		t.Error("context errors must not be retryable")
	}
	if !Retryable(errors.New("connection reset")) {
		t.Error("an unclassified error counts as transient")
	}
	if c, ok := ClassOf(errors.New("x")); ok || c != Transient {
		t.Errorf("ClassOf(plain) = %v, %v; want Transient, false", c, ok)
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Class: RateLimited, Provider: "kis", Dataset: "kis-kospi-daily", Code: "EGW00201",
		Message: "초당 거래건수를 초과하였습니다.", RetryAfter: time.Second, Status: 500, Err: errors.New("inner")}
	got := e.Error()
	for _, want := range []string{"kis kis-kospi-daily", "rate limited", "(EGW00201)", "[HTTP 500]", "초당", "retry after 1s", "inner"} {
		if !strings.Contains(got, want) {
			t.Errorf("Error() = %q, missing %q", got, want)
		}
	}
	if !errors.Is(e, e.Err) {
		t.Error("Unwrap does not reach Err")
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if w := (&Error{ResetAt: now.Add(time.Hour)}).Wait(now); w != time.Hour {
		t.Errorf("Wait(ResetAt) = %v", w)
	}
	if w := (&Error{Until: now.Add(-time.Hour)}).Wait(now); w != 0 {
		t.Errorf("Wait(past Until) = %v", w)
	}
	q := (&Error{Class: QuotaExhausted, Provider: "datago", ResetAt: now}).Error()
	if !strings.Contains(q, "quota resets at 2026-01-01T00:00:00Z") {
		t.Errorf("quota error text %q", q)
	}
}

func TestAsError(t *testing.T) {
	if AsError(nil) != nil {
		t.Error("AsError(nil) != nil")
	}
	plain := errors.New("boom")
	if e := AsError(plain); e.Class != Transient || !errors.Is(e, plain) {
		t.Errorf("AsError(plain) = %+v", e)
	}
	orig := &Error{Class: NoData}
	if AsError(fmt.Errorf("w: %w", orig)) != orig {
		t.Error("AsError does not unwrap")
	}
}

// TestRetryAfterIsCapped: an HTTP-date Retry-After far ahead, or a huge
// number of seconds, asks for at most MaxWait.
func TestRetryAfterIsCapped(t *testing.T) {
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"Fri, 31 Dec 2999 23:59:59 GMT": MaxWait,
		"99999999999":                   MaxWait,
		"3600":                          MaxWait,
		"7":                             7 * time.Second,
		"Mon, 30 Nov 2026 00:00:30 GMT": 30 * time.Second,
		"Sun, 29 Nov 2026 00:00:00 GMT": 0,
	} {
		got, ok := RetryAfter(http.Header{"Retry-After": {v}}, now)
		if !ok || got != want {
			t.Errorf("Retry-After %q = %v, %v; want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"-1", "NaN", "soon"} {
		if got, ok := RetryAfter(http.Header{"Retry-After": {v}}, now); ok {
			t.Errorf("Retry-After %q accepted as %v", v, got)
		}
	}
}
