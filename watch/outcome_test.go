package watch

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/connector"
)

func TestClassifyError(t *testing.T) {
	ce := func(c connector.Class, status int, code string) error {
		return fmt.Errorf("probing: %w", &connector.Error{Class: c, Provider: "p", Status: status, Code: code})
	}
	for _, tc := range []struct {
		name   string
		err    error
		want   Outcome
		status int
	}{
		{"nil", nil, OK, 0},
		{"no data", ce(connector.NoData, 200, "INFO-200"), NoData, 200},
		{"auth", ce(connector.AuthFailed, 401, ""), AuthFailed, 401},
		{"429", ce(connector.RateLimited, 429, "429"), RateLimited, 429},
		{"blocked", ce(connector.Blocked, 418, ""), RateLimited, 418},
		{"provider quota", ce(connector.QuotaExhausted, 200, "22"), RateLimited, 200},
		{"our quota", ce(connector.QuotaExhausted, 0, "sluice-quota"), Throttled, 0},
		{"our other code", ce(connector.Transient, 0, "sluice-permits"), Throttled, 0},
		{"bad request", ce(connector.BadRequest, 400, ""), ProviderError, 400},
		{"5xx", ce(connector.Transient, 503, ""), ProviderError, 503},
		{"reset", ce(connector.Transient, 0, ""), Network, 0},
		{"gate", fmt.Errorf("waiting for the rate limiter before kis data call: %w", NotSent(errors.New("limiter unreachable"))), Throttled, 0},
		{"gate deadline", NotSent(context.DeadlineExceeded), Throttled, 0},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), Network, 0},
		{"other", errors.New("boom"), ProviderError, 0},
	} {
		got, status := ClassifyError(tc.err)
		if got != tc.want || status != tc.status {
			t.Errorf("%s: %s %d, want %s %d", tc.name, got, status, tc.want, tc.status)
		}
	}
	if NotSent(nil) != nil {
		t.Error("NotSent(nil) is not nil")
	}
	if err := NotSent(context.Canceled); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrNotSent) {
		t.Error("NotSent does not unwrap")
	}
}

func TestOutcomes(t *testing.T) {
	for _, o := range Outcomes {
		p, err := ParseOutcome(string(o))
		if err != nil || p != o {
			t.Errorf("%s: %v", o, err)
		}
		n := 0
		for _, b := range []bool{o.Good(), o.Bad(), o.Operational()} {
			if b {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s is in %d of good, bad, operational; want exactly one", o, n)
		}
	}
	if _, err := ParseOutcome("up"); err == nil {
		t.Error("parsed up")
	}
}
