package registry

import (
	"math"
	"time"
)

// Scopes a rate limit may apply to.
const (
	ScopeService = "service" // data.go.kr: per 활용신청 (service); datasets name it with scope_key
	ScopeKey     = "key"     // per credential (app key, API key)
	ScopeIP      = "ip"      // per client IP address
	ScopeAccount = "account" // per account
)

var scopeValues = []string{ScopeService, ScopeKey, ScopeIP, ScopeAccount}

// MaxWindowCount is the largest count a window shorter than a day may
// declare: the limiter keeps one grant per call of its largest window in
// its workflow state, which Temporal bounds. (A requests_per_day quota is a
// counter and may be larger.)
const MaxWindowCount = 10_000

// MinIntervalResolution is the smallest minimum interval the limiter
// honours: anything shorter rounds to no interval at all against its
// tolerance of tens of milliseconds, so it is refused rather than dropped.
const MinIntervalResolution = time.Millisecond

// Window is one "at most Count calls in any sliding window of Length"
// limit. An unknown window (declared as `unknown`) has Count 0 until the
// registry's defaults fill it in; Unknown stays true so it is reported.
type Window struct {
	Field   string // the YAML field it came from, e.g. requests_per_day
	Length  time.Duration
	Count   int
	Unknown bool
	// Defaulted is true when Count comes from defaults.unknown_limits.
	Defaulted bool
	Pos       Pos
}

// PerDay is how many calls the window allows in a day at most.
func (w Window) PerDay() float64 {
	if w.Count <= 0 || w.Length <= 0 {
		return 0
	}
	return float64(w.Count) * float64(24*time.Hour) / float64(w.Length)
}

// RateLimit is one declared limit entry: a scope with one or more windows,
// an optional minimum interval between two calls, and the source the numbers
// were read from. A number with no source is reported as unsourced.
type RateLimit struct {
	Scope              string
	Windows            []Window
	MinInterval        time.Duration
	MinIntervalUnknown bool
	MinIntervalPos     Pos
	Source             *Source
	Note               string
	// AllUnknown is true for `rate_limits: unknown`: nothing is known, the
	// defaults' unknown_limits apply in full.
	AllUnknown bool
	Pos        Pos
}

// Window returns the window of the given length, if declared.
func (rl *RateLimit) Window(length time.Duration) (Window, bool) {
	for _, w := range rl.Windows {
		if w.Length == length {
			return w, true
		}
	}
	return Window{}, false
}

// DailyCapacity is the most calls a day the limit allows: the tightest of
// its windows and its minimum interval. It is +Inf when nothing binds.
func (rl *RateLimit) DailyCapacity() float64 {
	capacity := math.Inf(1)
	for _, w := range rl.Windows {
		if c := w.PerDay(); c > 0 && c < capacity {
			capacity = c
		}
	}
	if rl.MinInterval > 0 {
		if c := float64(24*time.Hour) / float64(rl.MinInterval); c < capacity {
			capacity = c
		}
	}
	return capacity
}

// windowFields maps the YAML window fields to their lengths.
var windowFields = []struct {
	name   string
	length time.Duration
}{
	{"requests_per_second", time.Second},
	{"requests_per_minute", time.Minute},
	{"requests_per_hour", time.Hour},
	{"requests_per_day", 24 * time.Hour},
}
