package connector

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxWait caps every wait a provider asks for (a Retry-After, a block time
// in a message): an HTTP date or a number far in the future must not
// freeze a scope for years. A provider still blocking after it answers
// again, and the wait starts over.
const MaxWait = time.Hour

// RetryAfter parses a Retry-After header (delay seconds or an HTTP date)
// relative to now, capped at MaxWait. It reports false when the header is
// absent or unusable (negative, not a number nor a date).
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 || secs != secs {
			return 0, false
		}
		if secs >= MaxWait.Seconds() {
			return MaxWait, true
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), MaxWait), true
	}
	return 0, false
}

// StatusClass is the default classification of a non-2xx HTTP status when
// the body says nothing more: 429 RateLimited, 401 and 403 AuthFailed, 408
// and 5xx Transient, other 4xx BadRequest, anything else Transient.
func StatusClass(status int) Class {
	switch {
	case status == http.StatusTooManyRequests:
		return RateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return AuthFailed
	case status == http.StatusRequestTimeout:
		return Transient
	case status >= 400 && status < 500:
		return BadRequest
	}
	return Transient
}

// StatusVerdict fails with the default class of a non-2xx status; the
// message carries the status text and a snippet of the body. A RateLimited
// verdict waits for Retry-After, or def. A status that would be
// BadRequest with a Foreign body (a gateway's HTML 400 or 404 page, an
// empty 404) is Transient instead (ForeignVerdict): the provider's API did
// not answer, so it did not refuse our request.
func StatusVerdict(h Head, def time.Duration) Verdict {
	c := StatusClass(h.Status)
	if c == BadRequest && h.Foreign() != "" {
		return ForeignVerdict(h)
	}
	msg := fmt.Sprintf("HTTP %d %s", h.Status, http.StatusText(h.Status))
	if s := Snippet(h.Bytes, 160); s != "" {
		msg += ": " + s
	}
	v := Fail(c, strconv.Itoa(h.Status), msg)
	if c == RateLimited {
		v.Err.RetryAfter = def
		if d, ok := RetryAfter(h.Header, h.Now); ok {
			v.Err.RetryAfter = d
		}
	}
	return v
}

// NextMidnight returns the first midnight after now in loc (UTC when loc
// is nil): when daily quotas reset.
func NextMidnight(now time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	t := now.In(loc)
	return time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
}

// CivilDate returns the date of t (its year, month and day as written) at
// midnight UTC, the form connectors compute date ranges in.
func CivilDate(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}
