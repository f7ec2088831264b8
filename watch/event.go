package watch

import (
	"fmt"
	"sort"
	"time"
)

// Event is one operational event: Sluice's own throttling, a provider's
// rate-limit answer, a backoff, an exhausted quota, a token refresh.
// Package events sends the same type through Temporal (events.Event is an
// alias of it), so this package need not import Temporal. Events are
// operations, never outages.
type Event struct {
	Kind     string            `json:"kind"`
	At       time.Time         `json:"at"`
	Scope    string            `json:"scope,omitempty"`
	Provider string            `json:"provider,omitempty"`
	Dataset  string            `json:"dataset,omitempty"`
	Message  string            `json:"message"`
	Attrs    map[string]string `json:"attrs,omitempty"`
}

// The event kinds the watch itself produces. The limiter's kinds
// (ratelimit.backoff, quota.exhausted)
// are in package events.
const (
	// KindProbeThrottled: our own limiter or quota kept a probe from
	// running.
	KindProbeThrottled = "probe.throttled"
	// KindProbeRateLimited: the provider answered a probe with a
	// rate-limit answer.
	KindProbeRateLimited = "probe.rate_limited"
	// KindConfirmBudgetSpent: a failure (or recovery) wanted a
	// confirmation probe but the day's confirmation budget was used up;
	// the next scheduled probe confirms instead. Once a day per dataset.
	KindConfirmBudgetSpent = "probe.confirm_budget_spent"
)

// Limits on an event.
const (
	MaxKindBytes = 64
	MaxAttrs     = 32
)

// Normalize returns the event with its time in UTC at microsecond
// precision, its message and attribute values cut to their limits as
// valid UTF-8, and at most MaxAttrs attributes (the first by name).
func (e Event) Normalize() Event {
	e.At = e.At.UTC().Truncate(time.Microsecond)
	e.Message = cleanText(e.Message, MaxMessageBytes)
	if len(e.Attrs) > 0 {
		keys := make([]string, 0, len(e.Attrs))
		for k := range e.Attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]string, min(len(keys), MaxAttrs))
		for _, k := range keys[:min(len(keys), MaxAttrs)] {
			out[cleanText(k, MaxKindBytes)] = cleanText(e.Attrs[k], MaxValueBytes)
		}
		e.Attrs = out
	}
	return e
}

// Validate checks an event before it is recorded.
func (e Event) Validate() error {
	switch {
	case e.Kind == "" || len(e.Kind) > MaxKindBytes:
		return fmt.Errorf("event: invalid kind %q", clip(e.Kind))
	case e.At.IsZero():
		return fmt.Errorf("%s event: no time", e.Kind)
	case e.At.Year() < 2000 || e.At.Year() > 9999:
		return fmt.Errorf("%s event: time %s out of range (years 2000 to 9999)", e.Kind, e.At.UTC().Format(time.RFC3339))
	case len(e.Scope) > 4*MaxIDBytes || len(e.Provider) > MaxIDBytes || len(e.Dataset) > MaxIDBytes:
		return fmt.Errorf("%s event: scope, provider or dataset too long", e.Kind)
	}
	return nil
}
