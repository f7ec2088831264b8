package watch

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Probe is the record of one probe of one dataset.
type Probe struct {
	// ID is the store's id, set when the probe is recorded.
	ID       int64     `json:"id,omitempty"`
	At       time.Time `json:"at"` // when the probe was sent (or held back)
	Dataset  string    `json:"dataset"`
	Provider string    `json:"provider,omitempty"`
	Outcome  Outcome   `json:"outcome"`
	// HTTPStatus is the status of the answer; 0 when none arrived.
	HTTPStatus int `json:"http_status,omitempty"`
	// Latency is how long the provider took to answer (0 when the probe
	// was not sent).
	Latency time.Duration `json:"latency"`
	// Shape is the answer's structure (FingerprintJSON, FingerprintXML),
	// for OK answers; empty otherwise.
	Shape Shape `json:"shape"`
	// Newest is the newest period the answer holds, canonical or in a
	// form ParsePeriod reads; "" when unknown.
	Newest string `json:"newest,omitempty"`
	// Confirmation is true for a probe sent to confirm another's
	// failure (or recovery), counted against the day's confirmation
	// budget; false for a scheduled probe.
	Confirmation bool `json:"confirmation,omitempty"`
	// Passive marks an observation no probe sent: a daily run's (or
	// backfill's) own answer from the dataset, recorded by the ingest. It
	// steps the state like a scheduled probe and, for an interval, stands
	// in for the next one (DatasetState.LastPassive, Observed). The store
	// keeps it in the state, not in the probe's row.
	Passive bool `json:"passive,omitempty"`
	// Message says what went wrong, redacted of secrets (the connector's
	// error text); "" when OK.
	Message string `json:"message,omitempty"`
}

// Limits on a probe's free-text fields; Normalize cuts longer ones.
const (
	MaxMessageBytes = 1000
	MaxNewestBytes  = 64
	MaxIDBytes      = 128
)

// Validate checks a probe before it is recorded and names the field and
// value that is wrong.
func (p Probe) Validate() error {
	switch {
	case p.Dataset == "" || len(p.Dataset) > MaxIDBytes || !utf8.ValidString(p.Dataset):
		return fmt.Errorf("probe: invalid dataset %q", clip(p.Dataset))
	case len(p.Provider) > MaxIDBytes || !utf8.ValidString(p.Provider):
		return fmt.Errorf("probe of %s: invalid provider %q", p.Dataset, clip(p.Provider))
	case p.At.IsZero():
		return fmt.Errorf("probe of %s: no time", p.Dataset)
	case p.At.Year() < 2000 || p.At.Year() > 9999:
		return fmt.Errorf("probe of %s: time %s out of range (years 2000 to 9999)", p.Dataset, p.At.UTC().Format(time.RFC3339))
	case !p.Outcome.Valid():
		return fmt.Errorf("probe of %s: invalid outcome %q", p.Dataset, clip(string(p.Outcome)))
	case p.HTTPStatus != 0 && (p.HTTPStatus < 100 || p.HTTPStatus > 599):
		return fmt.Errorf("probe of %s: invalid HTTP status %d", p.Dataset, p.HTTPStatus)
	case p.Latency < 0:
		return fmt.Errorf("probe of %s: negative latency %s", p.Dataset, p.Latency)
	}
	return nil
}

// Normalize returns the probe with its time in UTC at microsecond
// precision (what the store keeps) and its text fields cut to their limits
// as valid UTF-8.
func (p Probe) Normalize() Probe {
	p.At = p.At.UTC().Truncate(time.Microsecond)
	p.Latency = p.Latency.Truncate(time.Microsecond)
	p.Message = cleanText(p.Message, MaxMessageBytes)
	p.Newest = cleanText(p.Newest, MaxNewestBytes)
	return p
}

func cleanText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > n {
		s = truncateUTF8(s, n-len("…")) + "…"
	}
	return s
}

// Ref is the evidence a Change keeps of a probe.
func (p Probe) Ref() ProbeRef {
	return ProbeRef{ID: p.ID, At: p.At, Outcome: p.Outcome, HTTPStatus: p.HTTPStatus, Latency: p.Latency, Confirmation: p.Confirmation}
}

// ProbeRef identifies a probe as evidence: its store id and what it saw.
type ProbeRef struct {
	ID           int64         `json:"id,omitempty"`
	At           time.Time     `json:"at"`
	Outcome      Outcome       `json:"outcome"`
	HTTPStatus   int           `json:"http_status,omitempty"`
	Latency      time.Duration `json:"latency"`
	Confirmation bool          `json:"confirmation,omitempty"`
}
