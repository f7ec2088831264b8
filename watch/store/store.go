// Package store keeps the watch's probes, per-dataset states, Changes and
// operational events in SQL (docs/watch.md): embedded SQLite by default — a
// file under the data directory, pure Go, nothing to install — and
// PostgreSQL in the compose stack, behind one interface with one
// conformance suite.
//
// Opening a store applies the schema migrations it lacks (versioned,
// idempotent, safe when several processes start at once). Writers in any
// number of goroutines and processes lose nothing: each Observe is one
// transaction that locks its dataset's state. Retention is declared in
// Retention and carried out by Compact: raw probes and the availability
// timeline are kept at least 90 days (the status page's 90-day uptime
// bars), then folded into daily aggregates that are kept.
//
// Nothing here imports Temporal: activities and a status server use the
// same Store.
package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/redact"
	"github.com/sluicehq/sluice/notify"
	"github.com/sluicehq/sluice/watch"
)

// Store is the watch's persistence. Implementations are safe for
// concurrent use.
type Store interface {
	// Observe records a probe and steps its dataset's state (watch.Step)
	// in one transaction: the probe, the new state, the timeline marks,
	// the Changes and events it produced. The result tells the caller
	// whether to send a confirmation probe. Observing the same probe
	// (dataset and time) again records nothing and returns the current
	// state with Duplicate set, so a retried activity never counts a
	// probe twice.
	Observe(ctx context.Context, p watch.Probe, cfg watch.Config) (watch.Result, error)
	// AddChanges records Changes found outside a probe (revisions, from
	// the ingest's look-back) and returns them with their ids.
	AddChanges(ctx context.Context, changes ...watch.Change) ([]watch.Change, error)
	// AddEvents records operational events.
	AddEvents(ctx context.Context, events ...watch.Event) error

	// States returns the state of every dataset ever probed (or of the
	// named ones), sorted by dataset, as of now (watch.DatasetState.Current:
	// unknown once a state has lapsed). A named dataset never probed
	// comes back as watch.NeverProbed.
	States(ctx context.Context, now time.Time, datasets ...string) ([]watch.DatasetState, error)
	// Changes returns the Changes matching f, newest first.
	Changes(ctx context.Context, f ChangeFilter) ([]watch.Change, error)
	// Probes returns the raw probes matching f, newest first.
	Probes(ctx context.Context, f ProbeFilter) ([]watch.Probe, error)
	// Events returns the operational events matching f, newest first.
	Events(ctx context.Context, f EventFilter) ([]watch.Event, error)
	// Uptime returns, per dataset, the availability over the windows
	// ending at q.Now and per calendar day for q.Days days, from the raw
	// timeline (docs/watch.md has the arithmetic).
	Uptime(ctx context.Context, q UptimeQuery) ([]watch.DatasetUptime, error)
	// History returns the daily aggregates kept after raw rows expire.
	History(ctx context.Context, f HistoryFilter) (History, error)

	// AddMaintenance records a maintenance window (`sluice maintenance
	// add`) and returns it with its id.
	AddMaintenance(ctx context.Context, w notify.Window) (notify.Window, error)
	// Maintenance returns the recorded windows that end after the given
	// time (zero: every one), by start.
	Maintenance(ctx context.Context, endingAfter time.Time) ([]notify.Window, error)
	// EndMaintenance ends the window id at at (when it would end later)
	// and returns it; ErrNoMaintenance when there is none.
	EndMaintenance(ctx context.Context, id string, at time.Time) (notify.Window, error)

	// Compact carries out the retention as of now: raw probes, timeline
	// marks and events older than Retention are folded into daily
	// aggregates (UTC days) and deleted, one day per transaction.
	Compact(ctx context.Context, now time.Time) (Compacted, error)
	// Close releases the database.
	Close() error
}

// Config says which database to open.
type Config struct {
	// DSN names the database: postgres://user@host:port/db (or
	// postgresql://), or sqlite:PATH for an SQLite file. Empty: SQLite at
	// SQLitePath(DataDir).
	DSN string
	// DataDir is Sluice's state directory (--data-dir), used when DSN is
	// empty.
	DataDir string
	// Retention is what Compact keeps; the zero value is
	// DefaultRetention.
	Retention Retention
}

// EnvDSN is the environment variable the commands read the watch
// database's DSN from (beside their --watch-db flag).
const EnvDSN = "SLUICE_WATCH_DB"

// SQLitePath is where the default SQLite store lives under a data
// directory.
func SQLitePath(dataDir string) string { return filepath.Join(dataDir, "watch", "watch.db") }

const day = 24 * time.Hour

// Retention is how long raw rows are kept before they are folded into
// daily aggregates.
type Retention struct {
	// Probes is how long raw probes and the availability timeline are
	// kept; at least MinProbeRetention.
	Probes time.Duration
	// Events is how long raw operational events are kept; at least a
	// day.
	Events time.Duration
}

// MinProbeRetention is the least raw probes are kept: the status page's
// 90-day uptime bars and windows are computed from them.
const MinProbeRetention = 90 * day

// DefaultRetention keeps raw probes and events 92 days: 90 days of bars
// and windows in any timezone, with a day to spare.
var DefaultRetention = Retention{Probes: 92 * day, Events: 92 * day}

func (r Retention) withDefaults() (Retention, error) {
	if r.Probes == 0 {
		r.Probes = DefaultRetention.Probes
	}
	if r.Events == 0 {
		r.Events = DefaultRetention.Events
	}
	if r.Probes < MinProbeRetention {
		return r, fmt.Errorf("opening the watch store: retention of raw probes %s is less than the %d days the 90-day uptime bars need", r.Probes, int(MinProbeRetention/day))
	}
	if r.Events < day {
		return r, fmt.Errorf("opening the watch store: retention of events %s is less than a day", r.Events)
	}
	return r, nil
}

// ChangeFilter selects Changes. Zero fields select everything.
type ChangeFilter struct {
	Datasets []string
	Kinds    []watch.ChangeKind
	Since    time.Time // inclusive
	Until    time.Time // exclusive
	Limit    int       // 0: DefaultLimit; at most MaxLimit
}

// ProbeFilter selects raw probes. Zero fields select everything.
type ProbeFilter struct {
	Datasets []string
	Outcomes []watch.Outcome
	Since    time.Time // inclusive
	Until    time.Time // exclusive
	Limit    int       // 0: DefaultLimit; at most MaxLimit
	// WithShapes fills each probe's Shape (otherwise only OK probes'
	// fingerprints are kept, in Shape-less records).
	WithShapes bool
}

// EventFilter selects operational events. Zero fields select everything.
type EventFilter struct {
	Kinds    []string
	Datasets []string
	Scopes   []string
	Since    time.Time // inclusive
	Until    time.Time // exclusive
	Limit    int       // 0: DefaultLimit; at most MaxLimit
}

// Limits on what one query returns.
const (
	DefaultLimit = 1000
	MaxLimit     = 100000
)

func limit(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultLimit, nil
	case n < 0 || n > MaxLimit:
		return 0, fmt.Errorf("limit %d out of range (1 to %d)", n, MaxLimit)
	}
	return n, nil
}

// UptimeQuery asks for uptime figures.
type UptimeQuery struct {
	// Datasets to report; empty: every dataset with a timeline.
	Datasets []string
	Now      time.Time
	// Windows end at Now; nil: watch.DefaultWindows (24 h, 7 d, 30 d,
	// 90 d).
	Windows []time.Duration
	// Days is how many calendar days (today included) to report; 0: 90.
	Days int
	// Location is where the days begin; nil: UTC.
	Location *time.Location
}

// History is the daily aggregates in a span.
type History struct {
	Probes []ProbeDay `json:"probes"`
	Events []EventDay `json:"events"`
}

// HistoryFilter selects daily aggregates by UTC day.
type HistoryFilter struct {
	Datasets []string
	Since    time.Time // the first day (its UTC date), inclusive; zero: the oldest
	Until    time.Time // exclusive; zero: everything
}

// ProbeDay is one dataset's probes and availability on one UTC day.
type ProbeDay struct {
	Dataset       string                  `json:"dataset"`
	Day           time.Time               `json:"day"` // midnight UTC
	Probes        int64                   `json:"probes"`
	Outcomes      map[watch.Outcome]int64 `json:"outcomes"`
	Confirmations int64                   `json:"confirmations"`
	LatencyMean   time.Duration           `json:"latency_mean"`
	LatencyMax    time.Duration           `json:"latency_max"`
	watch.Availability
}

// EventDay counts one kind of event on one UTC day.
type EventDay struct {
	Day      time.Time `json:"day"`
	Kind     string    `json:"kind"`
	Scope    string    `json:"scope,omitempty"`
	Provider string    `json:"provider,omitempty"`
	Dataset  string    `json:"dataset,omitempty"`
	Count    int64     `json:"count"`
}

// Compacted is what one Compact folded away.
type Compacted struct {
	Days   int   // UTC days compacted
	Probes int64 // raw probes folded and deleted
	Marks  int64 // timeline marks deleted
	Events int64 // raw events folded and deleted
}

// ErrNoMaintenance is returned by EndMaintenance for an id no window has.
var ErrNoMaintenance = errors.New("no such maintenance window")

// ErrUnsupportedDSN is returned for a DSN that names neither database.
var ErrUnsupportedDSN = errors.New("unsupported watch database")

// Kind is which database a DSN names.
type Kind string

// The databases.
const (
	SQLite   Kind = "sqlite"
	Postgres Kind = "postgres"
)

// ParseDSN tells which database a DSN names and returns what its driver
// takes: the file path for SQLite, the URL for PostgreSQL.
func ParseDSN(dsn string) (Kind, string, error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		u, err := url.Parse(dsn)
		if err != nil {
			return "", "", fmt.Errorf("%w: %s is not a URL", ErrUnsupportedDSN, Describe(dsn))
		}
		if u.Host == "" || strings.Trim(u.Path, "/") == "" {
			return "", "", fmt.Errorf("%w: %s names no host or database (postgres://user@host:5432/database)", ErrUnsupportedDSN, Describe(dsn))
		}
		return Postgres, dsn, nil
	case strings.HasPrefix(dsn, "sqlite:"):
		p := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")
		if p == "" || strings.ContainsAny(p, "?#") || p == ":memory:" {
			return "", "", fmt.Errorf("%w: %q: give an SQLite file path without ? or # (sqlite:/var/lib/sluice/watch/watch.db)", ErrUnsupportedDSN, dsn)
		}
		return SQLite, p, nil
	}
	return "", "", fmt.Errorf("%w: %s (use postgres://user@host:5432/database or sqlite:PATH)", ErrUnsupportedDSN, Describe(dsn))
}

// Describe returns a DSN fit for messages: every password it holds (a
// URL's user info, ?password= or ?sslpassword=, a key/value password=…)
// is masked (redact.DSN).
func Describe(dsn string) string { return redact.DSN(dsn) }

// Open opens (creating it if needed) the store cfg names and applies the
// migrations it lacks.
func Open(ctx context.Context, cfg Config) (Store, error) {
	ret, err := cfg.Retention.withDefaults()
	if err != nil {
		return nil, err
	}
	dsn := cfg.DSN
	if dsn == "" {
		if cfg.DataDir == "" {
			return nil, errors.New("opening the watch store: neither a DSN nor a data directory given")
		}
		dsn = "sqlite:" + SQLitePath(cfg.DataDir)
	}
	kind, target, err := ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("opening the watch store: %w", err)
	}
	switch kind {
	case SQLite:
		return openSQLite(ctx, target, ret)
	default:
		return openPostgres(ctx, target, ret)
	}
}
