package simulator

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Fault is one injected misbehaviour, for one provider and optionally one
// dataset (empty = all), optionally only from From until Until. Every
// matching fault applies. Faults that fail a request (Down, ResetRate,
// ErrorRate, Shape) act at the provider's edge, before authentication and
// rate limiting, so such requests are charged to no scope (a Shape that
// spends a daily quota excepted, see Shape); Latency delays a request
// before it is handled; SlowBody and TruncateAfter shape the body of an
// otherwise normal answer; RejectAtFraction makes the provider's own
// limiter stricter than its declaration.
type Fault struct {
	// Provider is the registry provider id the fault applies to; empty
	// means every provider.
	Provider string `json:"provider,omitempty"`
	// Dataset narrows the fault to one dataset of Provider; empty means
	// all of them. Requests that name no dataset (KIS tokens) match only
	// a fault without one.
	Dataset string `json:"dataset,omitempty"`
	// ErrorRate is the probability of answering with ErrorStatus and a
	// plain-text body instead of the provider's answer.
	ErrorRate float64 `json:"error_rate,omitempty"`
	// ErrorStatus is the 5xx status of injected errors; 0 means 503.
	ErrorStatus int `json:"error_status,omitempty"`
	// Latency delays every matching request before it is handled.
	Latency Latency `json:"latency,omitzero"`
	// SlowBody sends the body at this many bytes a second (0: at once).
	SlowBody int `json:"slow_body,omitempty"`
	// TruncateAfter sends only this many bytes of the body (with the full
	// Content-Length) and then closes the connection (0: never): the
	// handler aborts with http.ErrAbortHandler, which net/http servers
	// turn into a dropped connection.
	TruncateAfter int `json:"truncate_after,omitempty"`
	// ResetRate is the probability of resetting the connection (TCP RST)
	// without answering.
	ResetRate float64 `json:"reset_rate,omitempty"`
	// Down answers every request with 503 Service Unavailable.
	Down bool `json:"down,omitempty"`
	// RejectAtFraction, in (0, 1), makes the provider reject with its
	// rate-limit error once our rate exceeds this fraction of the declared
	// limit (each window's count × fraction, at least 1; the minimum
	// interval ÷ fraction) — a declaration that was too generous.
	RejectAtFraction float64 `json:"reject_at_fraction,omitempty"`

	// Shape answers with one of the real answer shapes the recorded
	// corpus holds instead of the provider's answer: a shape of the
	// provider's own (Shaper: data.go.kr gateway-xml, gateway-json,
	// flat-json; UPBIT 429-text; KIS token-expired, rt-cd; FRED
	// key-not-registered) or one every provider speaks (html-maintenance,
	// empty-body). A shape that does not apply to a request (KIS
	// token-expired on a data call) leaves it alone. docs/simulator.md
	// lists every shape with its bytes.
	Shape string `json:"shape,omitempty"`
	// Code is the provider's code the Shape carries (data.go.kr
	// returnReasonCode or resultCode, KIS rt_cd); "" is the shape's
	// default.
	Code string `json:"code,omitempty"`
	// MsgCode is the msg_cd of a KIS rt-cd shape; "" is the rt_cd's
	// default.
	MsgCode string `json:"msg_cd,omitempty"`
	// Message replaces the text the Shape carries (data.go.kr
	// returnAuthMsg or resultMsg, KIS msg1, FRED error_message); "" is
	// the shape's default.
	Message string `json:"message,omitempty"`
	// Status is the HTTP status of the Shape's answer; 0 is the shape's
	// default.
	Status int `json:"status,omitempty"`
	// ShapeRate is the probability a matching request gets the Shape; 0
	// means every one.
	ShapeRate float64 `json:"shape_rate,omitempty"`
	// Times, when > 0, lets the Shape answer at most this many requests
	// (the fault stays listed but shapes nothing more); 0 is no limit.
	// Setting the faults again starts the count afresh.
	Times int `json:"times,omitempty"`

	// From and Until bound when the fault applies, on the simulator's
	// clock (Options.Now): from From (zero: always) until before Until
	// (zero: for ever). In the --fault syntax either may be relative to
	// the moment the fault is set ("+30s").
	From  time.Time `json:"from,omitzero"`
	Until time.Time `json:"until,omitzero"`
}

// Latency is a delay distribution: Fixed plus a uniform Jitter, or, when
// Quantiles is set, a value interpolated between evenly spaced quantiles
// (Quantiles[0] is the minimum, the last the maximum).
type Latency struct {
	// Fixed is the delay every request gets.
	Fixed time.Duration
	// Jitter is the width of a uniform delay added to Fixed.
	Jitter time.Duration
	// Quantiles, when set, replace Fixed and Jitter: evenly spaced
	// quantiles of the delay, ascending.
	Quantiles []time.Duration
}

// IsZero reports whether the latency adds no delay.
func (l Latency) IsZero() bool { return l.Fixed == 0 && l.Jitter == 0 && len(l.Quantiles) == 0 }

type latencyJSON struct {
	Fixed     string   `json:"fixed,omitempty"`
	Jitter    string   `json:"jitter,omitempty"`
	Quantiles []string `json:"quantiles,omitempty"`
}

// MarshalJSON writes durations as Go duration strings ("150ms").
func (l Latency) MarshalJSON() ([]byte, error) {
	var j latencyJSON
	if l.Fixed != 0 {
		j.Fixed = l.Fixed.String()
	}
	if l.Jitter != 0 {
		j.Jitter = l.Jitter.String()
	}
	for _, q := range l.Quantiles {
		j.Quantiles = append(j.Quantiles, q.String())
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads durations written as Go duration strings.
func (l *Latency) UnmarshalJSON(b []byte) error {
	var j latencyJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("decoding latency: %w", err)
	}
	var out Latency
	var err error
	if j.Fixed != "" {
		if out.Fixed, err = time.ParseDuration(j.Fixed); err != nil {
			return fmt.Errorf("decoding latency.fixed: %w", err)
		}
	}
	if j.Jitter != "" {
		if out.Jitter, err = time.ParseDuration(j.Jitter); err != nil {
			return fmt.Errorf("decoding latency.jitter: %w", err)
		}
	}
	for i, q := range j.Quantiles {
		d, err := time.ParseDuration(q)
		if err != nil {
			return fmt.Errorf("decoding latency.quantiles[%d]: %w", i, err)
		}
		out.Quantiles = append(out.Quantiles, d)
	}
	*l = out
	return nil
}

// sample draws a delay for a uniform u in [0, 1).
func (l Latency) sample(u float64) time.Duration {
	if n := len(l.Quantiles); n > 0 {
		if n == 1 {
			return l.Quantiles[0]
		}
		pos := u * float64(n-1)
		i := int(pos)
		if i >= n-1 {
			return l.Quantiles[n-1]
		}
		frac := pos - float64(i)
		return l.Quantiles[i] + time.Duration(frac*float64(l.Quantiles[i+1]-l.Quantiles[i]))
	}
	return l.Fixed + time.Duration(u*float64(l.Jitter))
}

// Validate checks the fault's values.
func (f Fault) Validate() error {
	rate := func(name string, v float64) error {
		if v < 0 || v > 1 || v != v {
			return fmt.Errorf("fault %s: %s %v is not between 0 and 1", f.scope(), name, v)
		}
		return nil
	}
	if err := rate("error_rate", f.ErrorRate); err != nil {
		return err
	}
	if err := rate("reset_rate", f.ResetRate); err != nil {
		return err
	}
	if f.RejectAtFraction < 0 || f.RejectAtFraction >= 1 || f.RejectAtFraction != f.RejectAtFraction {
		return fmt.Errorf("fault %s: reject_at_fraction %v is not in [0, 1)", f.scope(), f.RejectAtFraction)
	}
	if f.ErrorStatus != 0 && (f.ErrorStatus < 500 || f.ErrorStatus > 599) {
		return fmt.Errorf("fault %s: error_status %d is not a 5xx status", f.scope(), f.ErrorStatus)
	}
	if f.SlowBody < 0 || f.TruncateAfter < 0 {
		return fmt.Errorf("fault %s: slow_body and truncate_after must not be negative", f.scope())
	}
	if f.Latency.Fixed < 0 || f.Latency.Jitter < 0 {
		return fmt.Errorf("fault %s: latency must not be negative", f.scope())
	}
	for i, q := range f.Latency.Quantiles {
		if q < 0 || (i > 0 && q < f.Latency.Quantiles[i-1]) {
			return fmt.Errorf("fault %s: latency quantiles must be non-negative and ascending", f.scope())
		}
	}
	if f.Dataset != "" && f.Provider == "" {
		return fmt.Errorf("fault for dataset %q names no provider", f.Dataset)
	}
	if err := rate("shape_rate", f.ShapeRate); err != nil {
		return err
	}
	if f.Times < 0 {
		return fmt.Errorf("fault %s: times %d must not be negative", f.scope(), f.Times)
	}
	if f.Shape == "" {
		for _, v := range []struct{ name, val string }{{"code", f.Code}, {"msg_cd", f.MsgCode}, {"message", f.Message},
			{"status", statusText(f.Status)}, {"shape_rate", rateText(f.ShapeRate)}, {"times", timesText(f.Times)}} {
			if v.val != "" {
				return fmt.Errorf("fault %s: %s %s is set but the fault has no shape (it only shapes a shape's answer)", f.scope(), v.name, v.val)
			}
		}
	}
	if f.Status != 0 && (f.Status < 200 || f.Status > 599) {
		return fmt.Errorf("fault %s: status %d is not an HTTP status from 200 to 599", f.scope(), f.Status)
	}
	if !f.From.IsZero() && !f.Until.IsZero() && !f.Until.After(f.From) {
		return fmt.Errorf("fault %s: until %s is not after from %s", f.scope(), f.Until.Format(time.RFC3339Nano), f.From.Format(time.RFC3339Nano))
	}
	return nil
}

func statusText(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func rateText(v float64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func timesText(n int) string { return statusText(n) }

// active reports whether the fault applies at now (its time window).
func (f Fault) active(now time.Time) bool {
	return (f.From.IsZero() || !now.Before(f.From)) && (f.Until.IsZero() || now.Before(f.Until))
}

// timed reports whether the fault has a time window.
func (f Fault) timed() bool { return !f.From.IsZero() || !f.Until.IsZero() }

func (f Fault) scope() string {
	switch {
	case f.Provider == "":
		return "for every provider"
	case f.Dataset == "":
		return "for " + f.Provider
	}
	return "for " + f.Provider + "/" + f.Dataset
}

func (f Fault) matches(provider, dataset string) bool {
	if f.Provider != "" && f.Provider != provider {
		return false
	}
	return f.Dataset == "" || f.Dataset == dataset
}

// ParseFault parses the --fault flag syntax: comma-separated key=value
// pairs, e.g.
//
//	provider=kis,dataset=kis-index-0001-kospi,error-rate=0.1,error-status=502
//	provider=fred,latency=20ms,jitter=10ms
//	provider=ecos,quantiles=1ms/5ms/50ms/400ms
//	provider=upbit,slow-body=2048,truncate-after=100,reset-rate=0.05
//	provider=datago,down
//	provider=kis,reject-at=0.5
//	provider=datago,dataset=fsc-stock-market-index,shape=gateway-json,code=22,status=429
//	provider=upbit,shape=429-text,times=3
//	provider=ecos,shape=html-maintenance,from=+10s,until=+1m
//	provider=fred,shape=key-not-registered,shape-rate=0.2,until=2026-12-04T16:00:00Z
//
// Keys: provider, dataset, error-rate, error-status, latency, jitter,
// quantiles (slash-separated), slow-body (bytes/s), truncate-after
// (bytes), reset-rate, down (or down=true), reject-at, shape, code,
// msg-cd, message, status, shape-rate, times, from, until (RFC 3339, or
// +DURATION from now). ParseFault reads relative times on the wall clock;
// ParseFaultAt takes the clock.
func ParseFault(s string) (Fault, error) { return ParseFaultAt(s, time.Now()) }

// ParseFaultAt is ParseFault with relative from and until ("+30s")
// counted from now.
func ParseFaultAt(s string, now time.Time) (Fault, error) {
	var f Fault
	s = strings.TrimSpace(s)
	if s == "" {
		return f, fmt.Errorf("parsing fault: empty")
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, hasVal := strings.Cut(part, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		var err error
		switch key {
		case "provider":
			f.Provider = val
		case "dataset":
			f.Dataset = val
		case "error-rate", "error_rate":
			f.ErrorRate, err = strconv.ParseFloat(val, 64)
		case "error-status", "error_status":
			f.ErrorStatus, err = strconv.Atoi(val)
		case "latency", "fixed":
			f.Latency.Fixed, err = time.ParseDuration(val)
		case "jitter":
			f.Latency.Jitter, err = time.ParseDuration(val)
		case "quantiles":
			for _, q := range strings.Split(val, "/") {
				d, qerr := time.ParseDuration(strings.TrimSpace(q))
				if qerr != nil {
					err = qerr
					break
				}
				f.Latency.Quantiles = append(f.Latency.Quantiles, d)
			}
		case "slow-body", "slow_body":
			f.SlowBody, err = strconv.Atoi(val)
		case "truncate-after", "truncate_after":
			f.TruncateAfter, err = strconv.Atoi(val)
		case "reset-rate", "reset_rate":
			f.ResetRate, err = strconv.ParseFloat(val, 64)
		case "down":
			f.Down = true
			if hasVal {
				f.Down, err = strconv.ParseBool(val)
			}
		case "reject-at", "reject_at", "reject-at-fraction", "reject_at_fraction":
			f.RejectAtFraction, err = strconv.ParseFloat(val, 64)
		case "shape":
			f.Shape = val
		case "code":
			f.Code = val
		case "msg-cd", "msg_cd":
			f.MsgCode = val
		case "message":
			f.Message = val
		case "status":
			f.Status, err = strconv.Atoi(val)
		case "shape-rate", "shape_rate":
			f.ShapeRate, err = strconv.ParseFloat(val, 64)
		case "times":
			f.Times, err = strconv.Atoi(val)
		case "from":
			f.From, err = parseFaultTime(val, now)
		case "until":
			f.Until, err = parseFaultTime(val, now)
		default:
			return Fault{}, fmt.Errorf("parsing fault %q: unknown key %q (known: provider, dataset, error-rate, error-status, latency, jitter, quantiles, slow-body, truncate-after, reset-rate, down, reject-at, shape, code, msg-cd, message, status, shape-rate, times, from, until)", s, key)
		}
		if err != nil {
			return Fault{}, fmt.Errorf("parsing fault %q: %s: %w", s, key, err)
		}
		if !hasVal && key != "down" {
			return Fault{}, fmt.Errorf("parsing fault %q: %s needs a value", s, key)
		}
	}
	if err := f.Validate(); err != nil {
		return Fault{}, fmt.Errorf("parsing fault %q: %w", s, err)
	}
	return f, nil
}

// parseFaultTime reads a from or until value: RFC 3339, or +DURATION
// after now.
func parseFaultTime(v string, now time.Time) (time.Time, error) {
	if rest, ok := strings.CutPrefix(v, "+"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is neither RFC 3339 nor +DURATION: %w", v, err)
		}
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a relative time must not be negative", v)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither RFC 3339 (2026-12-04T16:00:00Z) nor +DURATION (+30s)", v)
	}
	return t, nil
}
