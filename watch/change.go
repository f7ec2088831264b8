package watch

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// ChangeKind says what a Change is about.
type ChangeKind string

// The kinds of Change (docs/watch.md).
const (
	// ChangeState: the dataset's confirmed state changed (From → To),
	// with the probes that confirmed it as Evidence.
	ChangeState ChangeKind = "state"
	// ChangeShape: the answer's fields were added, removed or retyped
	// (Shape).
	ChangeShape ChangeKind = "shape"
	// ChangeLate: the newest period (From) is older than the cycle and
	// publication lag allow (To: the oldest period that would not be
	// late).
	ChangeLate ChangeKind = "late"
	// ChangeCaughtUp: a late dataset's newest period (To) is due again.
	ChangeCaughtUp ChangeKind = "caught_up"
	// ChangeRevision: a re-fetched period's value differs (Period, From →
	// To).
	ChangeRevision ChangeKind = "revision"
	// ChangeDegraded: a dataset confirmed up answers slowly, confirmed by
	// consecutive slow answers (From "up", To "degraded"), or answers in
	// time again, confirmed (From "degraded", To "up").
	ChangeDegraded ChangeKind = "degraded"
)

// ChangeKinds lists the kinds in a stable order.
var ChangeKinds = []ChangeKind{ChangeState, ChangeShape, ChangeLate, ChangeCaughtUp, ChangeRevision, ChangeDegraded}

// Valid reports whether k is one of the kinds.
func (k ChangeKind) Valid() bool { return slices.Contains(ChangeKinds, k) }

// Change is a durable, queryable record that something about a dataset
// changed.
type Change struct {
	ID      int64      `json:"id,omitempty"` // the store's id
	At      time.Time  `json:"at"`
	Dataset string     `json:"dataset"`
	Kind    ChangeKind `json:"kind"`
	From    string     `json:"from,omitempty"`
	To      string     `json:"to,omitempty"`
	Period  string     `json:"period,omitempty"`
	// Summary says it in one sentence, for a person.
	Summary string `json:"summary"`
	// Evidence are the probes that confirmed a state change.
	Evidence []ProbeRef `json:"evidence,omitempty"`
	// Shape is what changed in the answer's structure.
	Shape *ShapeDiff `json:"shape,omitempty"`
}

// Validate checks a change before it is recorded.
func (c Change) Validate() error {
	switch {
	case c.Dataset == "" || len(c.Dataset) > MaxIDBytes:
		return fmt.Errorf("change: invalid dataset %q", clip(c.Dataset))
	case !c.Kind.Valid():
		return fmt.Errorf("change of %s: invalid kind %q", c.Dataset, clip(string(c.Kind)))
	case c.At.IsZero():
		return fmt.Errorf("change of %s: no time", c.Dataset)
	case c.At.Year() < 2000 || c.At.Year() > 9999:
		return fmt.Errorf("change of %s: time %s out of range (years 2000 to 9999)", c.Dataset, c.At.UTC().Format(time.RFC3339))
	}
	return nil
}

// MaxValueBytes bounds the From and To of a Change; longer values are
// cut.
const MaxValueBytes = 256

// MaxEvidence bounds the probes a Change keeps as evidence (the latest).
const MaxEvidence = 100

// Normalize returns the change with its time in UTC at microsecond
// precision, its text cut to its limits as valid UTF-8 and at most
// MaxEvidence probes of evidence.
func (c Change) Normalize() Change {
	c.At = c.At.UTC().Truncate(time.Microsecond)
	c.From, c.To = cleanText(c.From, MaxValueBytes), cleanText(c.To, MaxValueBytes)
	c.Period = cleanText(c.Period, MaxNewestBytes)
	c.Summary = cleanText(c.Summary, MaxMessageBytes)
	if n := len(c.Evidence); n > MaxEvidence {
		c.Evidence = c.Evidence[n-MaxEvidence:]
	}
	return c
}

// DetectRevisions compares the values of the periods two fetches both
// hold — old is what the lake had, new what the look-back re-fetched —
// and returns one revision Change per period whose value differs, sorted
// by period. Values are compared as written after trimming spaces, except
// that two plain decimals equal in value are the same (1.50 = 1.5,
// 007 = 7); periods on one side only are not revisions.
func DetectRevisions(at time.Time, dataset string, old, new map[string]string) []Change {
	periods := make([]string, 0, len(new))
	for p := range new {
		if _, ok := old[p]; ok {
			periods = append(periods, p)
		}
	}
	sort.Strings(periods)
	var out []Change
	for _, p := range periods {
		a, b := old[p], new[p]
		if sameValue(a, b) {
			continue
		}
		from, to := cleanText(strings.TrimSpace(a), MaxValueBytes), cleanText(strings.TrimSpace(b), MaxValueBytes)
		per := cleanText(p, MaxNewestBytes)
		out = append(out, Change{
			At: at, Dataset: dataset, Kind: ChangeRevision, Period: per, From: from, To: to,
			Summary: fmt.Sprintf("%s revised %s: %s → %s", dataset, per, quoteEmpty(from), quoteEmpty(to)),
		})
	}
	return out
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func sameValue(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == b {
		return true
	}
	ca, oka := canonicalDecimal(a)
	cb, okb := canonicalDecimal(b)
	return oka && okb && ca == cb
}

// canonicalDecimal rewrites a plain decimal ([+-]digits[.digits], or
// .digits) without leading or trailing zeros and with -0 as 0; ok is false
// for anything else (exponents, thousands separators, words).
func canonicalDecimal(s string) (string, bool) {
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" && frac == "" {
		return "", false
	}
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return "", false
			}
		}
	}
	intPart = strings.TrimLeft(intPart, "0")
	frac = strings.TrimRight(frac, "0")
	if intPart == "" {
		intPart = "0"
	}
	out := intPart
	if frac != "" {
		out += "." + frac
	}
	if neg && out != "0" {
		out = "-" + out
	}
	return out, true
}
