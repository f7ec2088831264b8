package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/watch"
)

func utcDay(t time.Time) time.Time { return t.UTC().Truncate(day) }

// Compact folds the raw rows older than the retention into daily
// aggregates and deletes them, oldest day first, one UTC day per
// transaction (so a compaction cut short resumes where it stopped and
// never counts a row twice: a day's aggregates are added and its rows
// deleted in the same transaction).
//
// The cutoffs are measured from now, or from the newest probe (event)
// when that is older: a clock jumping ahead never deletes the most recent
// retention's worth of raw rows.
func (s *sqlStore) Compact(ctx context.Context, now time.Time) (Compacted, error) {
	var c Compacted
	ref := func(table string) (time.Time, error) {
		var v sql.NullInt64
		if err := s.db.QueryRowContext(ctx, "SELECT MAX(at) FROM "+table).Scan(&v); err != nil {
			return time.Time{}, err
		}
		if v.Valid && fromUS(v.Int64).Before(now) {
			return fromUS(v.Int64), nil
		}
		return now, nil
	}
	pref, err := ref("probes")
	if err != nil {
		return c, fmt.Errorf("compacting %s: %w", s.d.describe, err)
	}
	eref, err := ref("events")
	if err != nil {
		return c, fmt.Errorf("compacting %s: %w", s.d.describe, err)
	}
	probeCut, eventCut := utcDay(pref.Add(-s.ret.Probes)), utcDay(eref.Add(-s.ret.Events))
	for {
		if err := ctx.Err(); err != nil {
			return c, err
		}
		var p, t, e sql.NullInt64
		if err := s.db.QueryRowContext(ctx, s.d.rebind(`SELECT (SELECT MIN(at) FROM probes WHERE at < ?), (SELECT MIN(at) FROM timeline WHERE at < ?), (SELECT MIN(at) FROM events WHERE at < ?)`),
			us(probeCut), us(probeCut), us(eventCut)).Scan(&p, &t, &e); err != nil {
			return c, fmt.Errorf("compacting %s: %w", s.d.describe, err)
		}
		var oldest int64
		for _, v := range []sql.NullInt64{p, t, e} {
			if v.Valid && (oldest == 0 || v.Int64 < oldest) {
				oldest = v.Int64
			}
		}
		if oldest == 0 {
			return c, nil
		}
		d := utcDay(fromUS(oldest))
		var got Compacted
		err := s.write(ctx, func(tx *sql.Tx) error {
			got = Compacted{Days: 1}
			if s.d.lock != nil {
				if err := s.d.lock(ctx, tx, lockCompact); err != nil {
					return err
				}
			}
			if d.Before(probeCut) {
				if err := s.compactProbes(ctx, tx, d, &got); err != nil {
					return err
				}
				if err := s.compactTimeline(ctx, tx, d, &got); err != nil {
					return err
				}
			}
			if d.Before(eventCut) {
				if err := s.compactEvents(ctx, tx, d, &got); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return c, fmt.Errorf("compacting %s on %s: %w", s.d.describe, d.Format("2006-01-02"), err)
		}
		c.Days++
		c.Probes += got.Probes
		c.Marks += got.Marks
		c.Events += got.Events
	}
}

// dayAgg is one probe_days row being added up.
type dayAgg struct {
	probes, confirmations, latSum, latMax int64
	counts                                map[watch.Outcome]int64
	avail                                 watch.Availability
}

func (s *sqlStore) addProbeDay(ctx context.Context, tx *sql.Tx, dataset string, d time.Time, a *dayAgg) error {
	cols := []string{"dataset", "day", "probes"}
	vals := []any{dataset, us(d), a.probes}
	for _, o := range watch.Outcomes {
		cols = append(cols, string(o))
		vals = append(vals, a.counts[o])
	}
	cols = append(cols, "confirmations", "latency_sum_us", "latency_max_us", "up_us", "degraded_us", "down_us", "unknown_us")
	vals = append(vals, a.confirmations, a.latSum, a.latMax, a.avail.Up.Microseconds(), a.avail.Degraded.Microseconds(),
		a.avail.Down.Microseconds(), a.avail.Unknown.Microseconds())
	var set []string
	for _, c := range cols[2:] {
		if c == "latency_max_us" {
			set = append(set, c+" = CASE WHEN excluded."+c+" > probe_days."+c+" THEN excluded."+c+" ELSE probe_days."+c+" END")
			continue
		}
		set = append(set, c+" = probe_days."+c+" + excluded."+c)
	}
	q := "INSERT INTO probe_days (" + strings.Join(cols, ", ") + ") VALUES (" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") +
		") ON CONFLICT (dataset, day) DO UPDATE SET " + strings.Join(set, ", ")
	if _, err := s.exec(ctx, tx, q, vals...); err != nil {
		return fmt.Errorf("adding up probes of %s on %s: %w", dataset, d.Format("2006-01-02"), err)
	}
	return nil
}

type dsDay struct {
	dataset string
	day     time.Time
}

// compactProbes folds the raw probes before the end of day d.
func (s *sqlStore) compactProbes(ctx context.Context, tx *sql.Tx, d time.Time, got *Compacted) error {
	end := d.Add(day)
	rows, err := tx.QueryContext(ctx, s.d.rebind("SELECT dataset, at, outcome, latency_us, confirmation FROM probes WHERE at < ?"), us(end))
	if err != nil {
		return fmt.Errorf("reading probes: %w", err)
	}
	aggs := map[dsDay]*dayAgg{}
	var order []dsDay
	for rows.Next() {
		var ds, outcome string
		var at, lat int64
		var conf int
		if err := rows.Scan(&ds, &at, &outcome, &lat, &conf); err != nil {
			rows.Close()
			return fmt.Errorf("reading probes: %w", err)
		}
		k := dsDay{ds, utcDay(fromUS(at))}
		a := aggs[k]
		if a == nil {
			a = &dayAgg{counts: map[watch.Outcome]int64{}}
			aggs[k] = a
			order = append(order, k)
		}
		a.probes++
		a.counts[watch.Outcome(outcome)]++
		a.confirmations += int64(conf)
		a.latSum += lat
		a.latMax = max(a.latMax, lat)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading probes: %w", err)
	}
	for _, k := range order {
		if err := s.addProbeDay(ctx, tx, k.dataset, k.day, aggs[k]); err != nil {
			return err
		}
	}
	res, err := s.exec(ctx, tx, "DELETE FROM probes WHERE at < ?", us(end))
	if err != nil {
		return fmt.Errorf("deleting probes: %w", err)
	}
	n, _ := res.RowsAffected()
	got.Probes += n
	return nil
}

// compactTimeline folds the availability of the marks before the end of
// day d into the daily aggregates and deletes them, carrying the state
// that still holds at the day's end over into a mark at that instant.
func (s *sqlStore) compactTimeline(ctx context.Context, tx *sql.Tx, d time.Time, got *Compacted) error {
	end := d.Add(day)
	rows, err := tx.QueryContext(ctx, s.d.rebind("SELECT dataset, at, state, until_at FROM timeline WHERE at < ? ORDER BY dataset, at"), us(end))
	if err != nil {
		return fmt.Errorf("reading the timeline: %w", err)
	}
	old := map[string]watch.Timeline{}
	var names []string
	for rows.Next() {
		var ds, state string
		var at, until int64
		if err := rows.Scan(&ds, &at, &state, &until); err != nil {
			rows.Close()
			return fmt.Errorf("reading the timeline: %w", err)
		}
		if _, ok := old[ds]; !ok {
			names = append(names, ds)
		}
		old[ds] = append(old[ds], watch.Mark{At: fromUS(at), State: watch.State(state), Until: fromUS(until)})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the timeline: %w", err)
	}
	for _, ds := range names {
		tl := old[ds]
		var nextAt int64
		err := tx.QueryRowContext(ctx, s.d.rebind("SELECT at FROM timeline WHERE dataset = ? AND at >= ? ORDER BY at LIMIT 1"), ds, us(end)).Scan(&nextAt)
		switch {
		case err == sql.ErrNoRows:
		case err != nil:
			return fmt.Errorf("reading the timeline of %s: %w", ds, err)
		}
		full := tl
		if nextAt != 0 {
			full = append(append(watch.Timeline(nil), tl...), watch.Mark{At: fromUS(nextAt), State: watch.Unknown, Until: fromUS(nextAt)})
		}
		for day0 := utcDay(tl[0].At); day0.Before(end); day0 = day0.Add(day) {
			a := &dayAgg{counts: map[watch.Outcome]int64{}, avail: full.Between(day0, day0.Add(day))}
			if err := s.addProbeDay(ctx, tx, ds, day0, a); err != nil {
				return err
			}
		}
		last := tl[len(tl)-1]
		if last.Until.After(end) && (nextAt == 0 || fromUS(nextAt).After(end)) {
			if _, err := s.exec(ctx, tx, "INSERT INTO timeline (dataset, at, state, until_at) VALUES (?, ?, ?, ?) ON CONFLICT (dataset, at) DO NOTHING",
				ds, us(end), string(last.State), us(last.Until)); err != nil {
				return fmt.Errorf("carrying the timeline of %s over: %w", ds, err)
			}
		}
	}
	res, err := s.exec(ctx, tx, "DELETE FROM timeline WHERE at < ?", us(end))
	if err != nil {
		return fmt.Errorf("deleting timeline marks: %w", err)
	}
	n, _ := res.RowsAffected()
	got.Marks += n
	return nil
}

type eventKey struct {
	day                            int64
	kind, scope, provider, dataset string
}

// compactEvents counts the raw events before the end of day d per day,
// kind, scope, provider and dataset, and deletes them.
func (s *sqlStore) compactEvents(ctx context.Context, tx *sql.Tx, d time.Time, got *Compacted) error {
	end := d.Add(day)
	rows, err := tx.QueryContext(ctx, s.d.rebind("SELECT at, kind, scope, provider, dataset FROM events WHERE at < ?"), us(end))
	if err != nil {
		return fmt.Errorf("reading events: %w", err)
	}
	counts := map[eventKey]int64{}
	var order []eventKey
	for rows.Next() {
		var at int64
		var k eventKey
		if err := rows.Scan(&at, &k.kind, &k.scope, &k.provider, &k.dataset); err != nil {
			rows.Close()
			return fmt.Errorf("reading events: %w", err)
		}
		k.day = us(utcDay(fromUS(at)))
		if _, ok := counts[k]; !ok {
			order = append(order, k)
		}
		counts[k]++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading events: %w", err)
	}
	for _, k := range order {
		if _, err := s.exec(ctx, tx, `INSERT INTO event_days (day, kind, scope, provider, dataset, count) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (day, kind, scope, provider, dataset) DO UPDATE SET count = event_days.count + excluded.count`,
			k.day, k.kind, k.scope, k.provider, k.dataset, counts[k]); err != nil {
			return fmt.Errorf("counting %s events: %w", k.kind, err)
		}
	}
	res, err := s.exec(ctx, tx, "DELETE FROM events WHERE at < ?", us(end))
	if err != nil {
		return fmt.Errorf("deleting events: %w", err)
	}
	n, _ := res.RowsAffected()
	got.Events += n
	return nil
}
