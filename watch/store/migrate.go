package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// migration is one versioned schema change. Its statements are separated
// by ";\n"; {{id}} stands for the dialect's auto-increment primary key.
// A migration is never edited once released: add another.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the schema, in order. Times are microseconds since the
// Unix epoch (0: none); booleans are 0 or 1; JSON is text.
var migrations = []migration{
	{1, "watch schema", `
CREATE TABLE probes (
	id {{id}},
	at BIGINT NOT NULL,
	dataset TEXT NOT NULL,
	provider TEXT NOT NULL DEFAULT '',
	outcome TEXT NOT NULL,
	http_status INTEGER NOT NULL DEFAULT 0,
	latency_us BIGINT NOT NULL DEFAULT 0,
	fingerprint TEXT NOT NULL DEFAULT '',
	newest TEXT NOT NULL DEFAULT '',
	confirmation INTEGER NOT NULL DEFAULT 0,
	message TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX probes_dataset_at ON probes (dataset, at);
CREATE INDEX probes_at ON probes (at);
CREATE TABLE shapes (
	fingerprint TEXT PRIMARY KEY,
	fields TEXT NOT NULL,
	first_seen BIGINT NOT NULL
);
CREATE TABLE dataset_states (
	dataset TEXT PRIMARY KEY,
	state TEXT NOT NULL,
	since BIGINT NOT NULL,
	reason TEXT NOT NULL,
	last_probe BIGINT NOT NULL,
	last_success BIGINT NOT NULL,
	newest TEXT NOT NULL,
	late INTEGER NOT NULL,
	valid_until BIGINT NOT NULL,
	probes BIGINT NOT NULL,
	detail TEXT NOT NULL
);
CREATE TABLE timeline (
	dataset TEXT NOT NULL,
	at BIGINT NOT NULL,
	state TEXT NOT NULL,
	until_at BIGINT NOT NULL,
	PRIMARY KEY (dataset, at)
);
CREATE INDEX timeline_at ON timeline (at);
CREATE TABLE changes (
	id {{id}},
	at BIGINT NOT NULL,
	dataset TEXT NOT NULL,
	kind TEXT NOT NULL,
	from_value TEXT NOT NULL DEFAULT '',
	to_value TEXT NOT NULL DEFAULT '',
	period TEXT NOT NULL DEFAULT '',
	summary TEXT NOT NULL DEFAULT '',
	detail TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX changes_dataset_at ON changes (dataset, at);
CREATE INDEX changes_at ON changes (at);
CREATE TABLE events (
	id {{id}},
	at BIGINT NOT NULL,
	kind TEXT NOT NULL,
	scope TEXT NOT NULL DEFAULT '',
	provider TEXT NOT NULL DEFAULT '',
	dataset TEXT NOT NULL DEFAULT '',
	message TEXT NOT NULL DEFAULT '',
	attrs TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_kind_at ON events (kind, at);
CREATE INDEX events_at ON events (at);
CREATE TABLE probe_days (
	dataset TEXT NOT NULL,
	day BIGINT NOT NULL,
	probes BIGINT NOT NULL DEFAULT 0,
	ok BIGINT NOT NULL DEFAULT 0,
	no_data BIGINT NOT NULL DEFAULT 0,
	provider_error BIGINT NOT NULL DEFAULT 0,
	auth_failed BIGINT NOT NULL DEFAULT 0,
	rate_limited BIGINT NOT NULL DEFAULT 0,
	throttled BIGINT NOT NULL DEFAULT 0,
	network BIGINT NOT NULL DEFAULT 0,
	confirmations BIGINT NOT NULL DEFAULT 0,
	latency_sum_us BIGINT NOT NULL DEFAULT 0,
	latency_max_us BIGINT NOT NULL DEFAULT 0,
	up_us BIGINT NOT NULL DEFAULT 0,
	degraded_us BIGINT NOT NULL DEFAULT 0,
	down_us BIGINT NOT NULL DEFAULT 0,
	unknown_us BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (dataset, day)
);
CREATE TABLE event_days (
	day BIGINT NOT NULL,
	kind TEXT NOT NULL,
	scope TEXT NOT NULL,
	provider TEXT NOT NULL,
	dataset TEXT NOT NULL,
	count BIGINT NOT NULL,
	PRIMARY KEY (day, kind, scope, provider, dataset)
)`},
	{2, "maintenance windows", `
CREATE TABLE maintenance (
	id {{id}},
	provider TEXT NOT NULL DEFAULT '',
	dataset TEXT NOT NULL DEFAULT '',
	start_at BIGINT NOT NULL,
	end_at BIGINT NOT NULL,
	reason TEXT NOT NULL DEFAULT '',
	created_at BIGINT NOT NULL
);
CREATE INDEX maintenance_end_at ON maintenance (end_at)`},
}

// SchemaVersion is the schema version this build writes.
var SchemaVersion = migrations[len(migrations)-1].version

func (m migration) statements(d *dialect) []string {
	body := strings.ReplaceAll(m.sql, "{{id}}", d.idColumn)
	var out []string
	for _, s := range strings.Split(body, ";\n") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// checksum identifies a migration's text, so that one edited after it
// was applied is refused rather than silently skipped.
func (m migration) checksum() string {
	h := sha256.Sum256([]byte(m.name + "\n" + m.sql))
	return hex.EncodeToString(h[:8])
}

// migrate applies the migrations the database lacks, in one transaction
// under the migration lock: a second process starting at the same time
// waits, then finds them applied.
func (s *sqlStore) migrate(ctx context.Context) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		if s.d.lock != nil {
			if err := s.d.lock(ctx, tx, lockMigrate); err != nil {
				return fmt.Errorf("taking the migration lock: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version INTEGER PRIMARY KEY,
	name TEXT NOT NULL,
	checksum TEXT NOT NULL,
	applied_at BIGINT NOT NULL
)`); err != nil {
			return fmt.Errorf("creating schema_migrations: %w", err)
		}
		rows, err := tx.QueryContext(ctx, "SELECT version, checksum FROM schema_migrations ORDER BY version")
		if err != nil {
			return fmt.Errorf("reading schema_migrations: %w", err)
		}
		applied := map[int]string{}
		newest := 0
		for rows.Next() {
			var v int
			var sum string
			if err := rows.Scan(&v, &sum); err != nil {
				rows.Close()
				return fmt.Errorf("reading schema_migrations: %w", err)
			}
			applied[v] = sum
			newest = max(newest, v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("reading schema_migrations: %w", err)
		}
		if newest > SchemaVersion {
			return fmt.Errorf("the database is at schema version %d, newer than this sluice knows (%d): upgrade sluice", newest, SchemaVersion)
		}
		for _, m := range migrations {
			if sum, ok := applied[m.version]; ok {
				if sum != m.checksum() {
					return fmt.Errorf("migration %d (%s) differs from the one applied to this database (checksum %s, applied %s): migrations are never edited once released", m.version, m.name, m.checksum(), sum)
				}
				continue
			}
			for _, stmt := range m.statements(s.d) {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("applying migration %d (%s): %w", m.version, m.name, err)
				}
			}
			if _, err := tx.ExecContext(ctx, s.d.rebind("INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)"),
				m.version, m.name, m.checksum(), time.Now().UnixMicro()); err != nil {
				return fmt.Errorf("recording migration %d: %w", m.version, err)
			}
		}
		return nil
	})
}
