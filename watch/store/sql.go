package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/watch"
)

// sqlStore is the Store over database/sql, for both dialects.
type sqlStore struct {
	db  *sql.DB
	d   *dialect
	ret Retention
	mu  sync.Mutex // serializes this process's writers where d.serialize
}

func newSQLStore(ctx context.Context, db *sql.DB, d *dialect, ret Retention) (*sqlStore, error) {
	s := &sqlStore{db: db, d: d, ret: ret}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening the watch store %s: %w", d.describe, err)
	}
	return s, nil
}

// Close closes the database.
func (s *sqlStore) Close() error { return s.db.Close() }

// maxAttempts bounds the retries of a transaction that failed on a busy
// database or a deadlock.
const maxAttempts = 12

// write runs fn in a transaction, again when the database says the
// failure is transient. fn must compute everything afresh each time.
func (s *sqlStore) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	wait := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := s.try(ctx, fn)
		if err == nil || ctx.Err() != nil || !s.d.retryable(err) || attempt == maxAttempts {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

func (s *sqlStore) try(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.d.serialize {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) exec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	return tx.ExecContext(ctx, s.d.rebind(q), args...)
}

// Times are kept as microseconds since the epoch; 0 is the zero time.
func us(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromUS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *sqlStore) Observe(ctx context.Context, p watch.Probe, cfg watch.Config) (watch.Result, error) {
	if err := p.Validate(); err != nil {
		return watch.Result{}, fmt.Errorf("recording a probe: %w", err)
	}
	p = p.Normalize()
	fp := p.Shape.Fingerprint()
	var shapeJSON []byte
	if fp != "" {
		var err error
		if shapeJSON, err = json.Marshal(p.Shape); err != nil {
			return watch.Result{}, fmt.Errorf("recording a probe of %s: encoding its shape: %w", p.Dataset, err)
		}
	}
	var res watch.Result
	err := s.write(ctx, func(tx *sql.Tx) error {
		prev, err := s.lockState(ctx, tx, p.Dataset)
		if err != nil {
			return err
		}
		if fp != "" {
			if _, err := s.exec(ctx, tx, "INSERT INTO shapes (fingerprint, fields, first_seen) VALUES (?, ?, ?) ON CONFLICT (fingerprint) DO NOTHING",
				fp, string(shapeJSON), us(p.At)); err != nil {
				return fmt.Errorf("recording a shape: %w", err)
			}
		}
		var id int64
		err = tx.QueryRowContext(ctx, s.d.rebind(`INSERT INTO probes (at, dataset, provider, outcome, http_status, latency_us, fingerprint, newest, confirmation, message)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dataset, at) DO NOTHING RETURNING id`),
			us(p.At), p.Dataset, p.Provider, string(p.Outcome), p.HTTPStatus, p.Latency.Microseconds(), fp, p.Newest, b2i(p.Confirmation), p.Message).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			res = watch.Result{Probe: p, State: prev, Duplicate: true, Confirm: watch.NextConfirm(cfg, prev)}
			return nil
		}
		if err != nil {
			return fmt.Errorf("recording a probe: %w", err)
		}
		p.ID = id
		res = watch.Step(cfg, prev, p)
		if err := s.applyMarks(ctx, tx, p.Dataset, res.Marks, res.State.ValidUntil); err != nil {
			return err
		}
		if res.Changes, err = s.insertChanges(ctx, tx, res.Changes); err != nil {
			return err
		}
		if err := s.insertEvents(ctx, tx, res.Events); err != nil {
			return err
		}
		return s.saveState(ctx, tx, res.State)
	})
	if err != nil {
		return watch.Result{}, fmt.Errorf("observing a probe of %s in %s: %w", p.Dataset, s.d.describe, err)
	}
	return res, nil
}

// lockState returns a dataset's state, locking its row until the
// transaction ends (creating an empty one first, so that there is a row to
// lock); a dataset never probed has the zero state.
func (s *sqlStore) lockState(ctx context.Context, tx *sql.Tx, dataset string) (watch.DatasetState, error) {
	if _, err := s.exec(ctx, tx, `INSERT INTO dataset_states (dataset, state, since, reason, last_probe, last_success, newest, late, valid_until, probes, detail)
VALUES (?, 'unknown', 0, '', 0, 0, '', 0, 0, 0, '') ON CONFLICT (dataset) DO NOTHING`, dataset); err != nil {
		return watch.DatasetState{}, fmt.Errorf("reading the state of %s: %w", dataset, err)
	}
	var detail string
	if err := tx.QueryRowContext(ctx, s.d.rebind("SELECT detail FROM dataset_states WHERE dataset = ?"+s.d.forUpdate), dataset).Scan(&detail); err != nil {
		return watch.DatasetState{}, fmt.Errorf("reading the state of %s: %w", dataset, err)
	}
	return decodeState(dataset, detail)
}

func decodeState(dataset, detail string) (watch.DatasetState, error) {
	var st watch.DatasetState
	if detail == "" {
		return st, nil
	}
	if err := json.Unmarshal([]byte(detail), &st); err != nil {
		return st, fmt.Errorf("decoding the state of %s: %w", dataset, err)
	}
	return st, nil
}

func (s *sqlStore) saveState(ctx context.Context, tx *sql.Tx, st watch.DatasetState) error {
	detail, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding the state of %s: %w", st.Dataset, err)
	}
	_, err = s.exec(ctx, tx, `UPDATE dataset_states SET state = ?, since = ?, reason = ?, last_probe = ?, last_success = ?, newest = ?, late = ?,
valid_until = ?, probes = ?, detail = ? WHERE dataset = ?`,
		string(st.State), us(st.Since), st.Reason, us(st.LastProbe), us(st.LastSuccess), st.Newest, b2i(st.Late),
		us(st.ValidUntil), st.Probes, string(detail), st.Dataset)
	if err != nil {
		return fmt.Errorf("saving the state of %s: %w", st.Dataset, err)
	}
	return nil
}

// applyMarks is watch.Timeline.Apply in SQL.
func (s *sqlStore) applyMarks(ctx context.Context, tx *sql.Tx, dataset string, marks []watch.Mark, validUntil time.Time) error {
	for _, m := range marks {
		if m.Rewrite {
			if _, err := s.exec(ctx, tx, "UPDATE timeline SET state = ? WHERE dataset = ? AND at >= ? AND state <> 'unknown'",
				string(m.State), dataset, us(m.At)); err != nil {
				return fmt.Errorf("backdating the timeline of %s: %w", dataset, err)
			}
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO timeline (dataset, at, state, until_at) VALUES (?, ?, ?, ?)
ON CONFLICT (dataset, at) DO UPDATE SET state = excluded.state,
until_at = CASE WHEN excluded.until_at > timeline.until_at THEN excluded.until_at ELSE timeline.until_at END`,
			dataset, us(m.At), string(m.State), us(m.Until)); err != nil {
			return fmt.Errorf("marking the timeline of %s: %w", dataset, err)
		}
	}
	if _, err := s.exec(ctx, tx, `UPDATE timeline SET until_at = ? WHERE dataset = ? AND until_at < ?
AND at = (SELECT MAX(at) FROM timeline WHERE dataset = ?)`, us(validUntil), dataset, us(validUntil), dataset); err != nil {
		return fmt.Errorf("extending the timeline of %s: %w", dataset, err)
	}
	return nil
}

type changeDetail struct {
	Evidence []watch.ProbeRef `json:"evidence,omitempty"`
	Shape    *watch.ShapeDiff `json:"shape,omitempty"`
}

func (s *sqlStore) insertChanges(ctx context.Context, tx *sql.Tx, changes []watch.Change) ([]watch.Change, error) {
	out := make([]watch.Change, 0, len(changes))
	for _, c := range changes {
		c = c.Normalize()
		detail, err := json.Marshal(changeDetail{Evidence: c.Evidence, Shape: c.Shape})
		if err != nil {
			return nil, fmt.Errorf("encoding a change of %s: %w", c.Dataset, err)
		}
		if err := tx.QueryRowContext(ctx, s.d.rebind(`INSERT INTO changes (at, dataset, kind, from_value, to_value, period, summary, detail)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`), us(c.At), c.Dataset, string(c.Kind), c.From, c.To, c.Period, c.Summary, string(detail)).Scan(&c.ID); err != nil {
			return nil, fmt.Errorf("recording a %s change of %s: %w", c.Kind, c.Dataset, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func (s *sqlStore) insertEvents(ctx context.Context, tx *sql.Tx, events []watch.Event) error {
	for _, e := range events {
		e = e.Normalize()
		attrs, err := json.Marshal(e.Attrs)
		if err != nil {
			return fmt.Errorf("encoding a %s event: %w", e.Kind, err)
		}
		if _, err := s.exec(ctx, tx, "INSERT INTO events (at, kind, scope, provider, dataset, message, attrs) VALUES (?, ?, ?, ?, ?, ?, ?)",
			us(e.At), e.Kind, e.Scope, e.Provider, e.Dataset, e.Message, string(attrs)); err != nil {
			return fmt.Errorf("recording a %s event: %w", e.Kind, err)
		}
	}
	return nil
}

func (s *sqlStore) AddChanges(ctx context.Context, changes ...watch.Change) ([]watch.Change, error) {
	for i := range changes {
		if err := changes[i].Validate(); err != nil {
			return nil, fmt.Errorf("recording changes: %w", err)
		}
	}
	var out []watch.Change
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = s.insertChanges(ctx, tx, changes)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("recording changes in %s: %w", s.d.describe, err)
	}
	return out, nil
}

func (s *sqlStore) AddEvents(ctx context.Context, events ...watch.Event) error {
	for i := range events {
		if err := events[i].Validate(); err != nil {
			return fmt.Errorf("recording events: %w", err)
		}
	}
	if err := s.write(ctx, func(tx *sql.Tx) error { return s.insertEvents(ctx, tx, events) }); err != nil {
		return fmt.Errorf("recording events in %s: %w", s.d.describe, err)
	}
	return nil
}

// where builds a WHERE clause from conditions and their arguments.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *where) in(column string, values []string) {
	if len(values) == 0 {
		return
	}
	ph := strings.TrimSuffix(strings.Repeat("?, ", len(values)), ", ")
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	w.add(column+" IN ("+ph+")", args...)
}

func (w *where) span(column string, since, until time.Time) {
	if !since.IsZero() {
		w.add(column+" >= ?", us(since))
	}
	if !until.IsZero() {
		w.add(column+" < ?", us(until))
	}
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

func (s *sqlStore) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return s.db.QueryContext(ctx, s.d.rebind(q), args...)
}

func (s *sqlStore) States(ctx context.Context, now time.Time, datasets ...string) ([]watch.DatasetState, error) {
	var w where
	w.in("dataset", datasets)
	rows, err := s.query(ctx, "SELECT dataset, detail FROM dataset_states"+w.String()+" ORDER BY dataset", w.args...)
	if err != nil {
		return nil, fmt.Errorf("reading states from %s: %w", s.d.describe, err)
	}
	defer rows.Close()
	found := map[string]watch.DatasetState{}
	var out []watch.DatasetState
	for rows.Next() {
		var ds, detail string
		if err := rows.Scan(&ds, &detail); err != nil {
			return nil, fmt.Errorf("reading states from %s: %w", s.d.describe, err)
		}
		st, err := decodeState(ds, detail)
		if err != nil {
			return nil, err
		}
		if st.State == "" { // a row created to be locked, never stepped
			continue
		}
		st = st.Current(now)
		found[ds] = st
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading states from %s: %w", s.d.describe, err)
	}
	for _, ds := range datasets {
		if _, ok := found[ds]; !ok {
			found[ds] = watch.NeverProbed(ds)
			out = append(out, watch.NeverProbed(ds))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dataset < out[j].Dataset })
	return out, nil
}

func (s *sqlStore) Changes(ctx context.Context, f ChangeFilter) ([]watch.Change, error) {
	n, err := limit(f.Limit)
	if err != nil {
		return nil, fmt.Errorf("reading changes: %w", err)
	}
	var w where
	w.in("dataset", f.Datasets)
	w.in("kind", strs(f.Kinds))
	w.span("at", f.Since, f.Until)
	rows, err := s.query(ctx, "SELECT id, at, dataset, kind, from_value, to_value, period, summary, detail FROM changes"+w.String()+
		fmt.Sprintf(" ORDER BY at DESC, id DESC LIMIT %d", n), w.args...)
	if err != nil {
		return nil, fmt.Errorf("reading changes from %s: %w", s.d.describe, err)
	}
	defer rows.Close()
	var out []watch.Change
	for rows.Next() {
		var c watch.Change
		var at int64
		var kind, detail string
		if err := rows.Scan(&c.ID, &at, &c.Dataset, &kind, &c.From, &c.To, &c.Period, &c.Summary, &detail); err != nil {
			return nil, fmt.Errorf("reading changes from %s: %w", s.d.describe, err)
		}
		c.At, c.Kind = fromUS(at), watch.ChangeKind(kind)
		var d changeDetail
		if err := json.Unmarshal([]byte(detail), &d); err != nil {
			return nil, fmt.Errorf("decoding change %d: %w", c.ID, err)
		}
		c.Evidence, c.Shape = d.Evidence, d.Shape
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading changes from %s: %w", s.d.describe, err)
	}
	return out, nil
}

func (s *sqlStore) Probes(ctx context.Context, f ProbeFilter) ([]watch.Probe, error) {
	n, err := limit(f.Limit)
	if err != nil {
		return nil, fmt.Errorf("reading probes: %w", err)
	}
	var w where
	w.in("p.dataset", f.Datasets)
	w.in("p.outcome", strs(f.Outcomes))
	w.span("p.at", f.Since, f.Until)
	fields := "''"
	join := ""
	if f.WithShapes {
		fields, join = "COALESCE(sh.fields, '')", " LEFT JOIN shapes sh ON sh.fingerprint = p.fingerprint"
	}
	rows, err := s.query(ctx, "SELECT p.id, p.at, p.dataset, p.provider, p.outcome, p.http_status, p.latency_us, p.newest, p.confirmation, p.message, "+fields+
		" FROM probes p"+join+w.String()+fmt.Sprintf(" ORDER BY p.at DESC, p.id DESC LIMIT %d", n), w.args...)
	if err != nil {
		return nil, fmt.Errorf("reading probes from %s: %w", s.d.describe, err)
	}
	defer rows.Close()
	var out []watch.Probe
	for rows.Next() {
		var p watch.Probe
		var at, lat int64
		var outcome, shape string
		var confirmation int
		if err := rows.Scan(&p.ID, &at, &p.Dataset, &p.Provider, &outcome, &p.HTTPStatus, &lat, &p.Newest, &confirmation, &p.Message, &shape); err != nil {
			return nil, fmt.Errorf("reading probes from %s: %w", s.d.describe, err)
		}
		p.At, p.Outcome, p.Latency, p.Confirmation = fromUS(at), watch.Outcome(outcome), time.Duration(lat)*time.Microsecond, confirmation != 0
		if shape != "" {
			if err := json.Unmarshal([]byte(shape), &p.Shape); err != nil {
				return nil, fmt.Errorf("decoding the shape of probe %d: %w", p.ID, err)
			}
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading probes from %s: %w", s.d.describe, err)
	}
	return out, nil
}

func (s *sqlStore) Events(ctx context.Context, f EventFilter) ([]watch.Event, error) {
	n, err := limit(f.Limit)
	if err != nil {
		return nil, fmt.Errorf("reading events: %w", err)
	}
	var w where
	w.in("kind", f.Kinds)
	w.in("dataset", f.Datasets)
	w.in("scope", f.Scopes)
	w.span("at", f.Since, f.Until)
	rows, err := s.query(ctx, "SELECT at, kind, scope, provider, dataset, message, attrs FROM events"+w.String()+
		fmt.Sprintf(" ORDER BY at DESC, id DESC LIMIT %d", n), w.args...)
	if err != nil {
		return nil, fmt.Errorf("reading events from %s: %w", s.d.describe, err)
	}
	defer rows.Close()
	var out []watch.Event
	for rows.Next() {
		var e watch.Event
		var at int64
		var attrs string
		if err := rows.Scan(&at, &e.Kind, &e.Scope, &e.Provider, &e.Dataset, &e.Message, &attrs); err != nil {
			return nil, fmt.Errorf("reading events from %s: %w", s.d.describe, err)
		}
		e.At = fromUS(at)
		if err := json.Unmarshal([]byte(attrs), &e.Attrs); err != nil {
			return nil, fmt.Errorf("decoding a %s event: %w", e.Kind, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading events from %s: %w", s.d.describe, err)
	}
	return out, nil
}

// timelines reads the marks from since on, with the last mark before
// since (the state at since), per dataset.
func (s *sqlStore) timelines(ctx context.Context, datasets []string, since, until time.Time) (map[string]watch.Timeline, error) {
	out := map[string]watch.Timeline{}
	read := func(q string, args []any) error {
		rows, err := s.query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ds, state string
			var at, until int64
			if err := rows.Scan(&ds, &at, &state, &until); err != nil {
				return err
			}
			out[ds] = append(out[ds], watch.Mark{At: fromUS(at), State: watch.State(state), Until: fromUS(until)})
		}
		return rows.Err()
	}
	var w where
	w.in("dataset", datasets)
	w.add("at < ?", us(since))
	if err := read("SELECT t.dataset, t.at, t.state, t.until_at FROM timeline t JOIN (SELECT dataset, MAX(at) AS at FROM timeline"+w.String()+
		" GROUP BY dataset) last ON last.dataset = t.dataset AND last.at = t.at", w.args); err != nil {
		return nil, fmt.Errorf("reading the timeline from %s: %w", s.d.describe, err)
	}
	w = where{}
	w.in("dataset", datasets)
	w.span("at", since, until)
	// Sorted here rather than by the database: cheaper than SQLite's
	// temporary B-tree over the whole span.
	if err := read("SELECT dataset, at, state, until_at FROM timeline"+w.String(), w.args); err != nil {
		return nil, fmt.Errorf("reading the timeline from %s: %w", s.d.describe, err)
	}
	for _, tl := range out {
		sort.Slice(tl, func(i, j int) bool { return tl[i].At.Before(tl[j].At) })
	}
	return out, nil
}

func (s *sqlStore) Uptime(ctx context.Context, q UptimeQuery) ([]watch.DatasetUptime, error) {
	if q.Now.IsZero() {
		return nil, errors.New("reading uptime: no time given")
	}
	windows := q.Windows
	if windows == nil {
		windows = watch.DefaultWindows
	}
	days := q.Days
	if days == 0 {
		days = 90
	}
	loc := q.Location
	if loc == nil {
		loc = time.UTC
	}
	longest := time.Duration(0)
	for _, w := range windows {
		if w <= 0 {
			return nil, fmt.Errorf("reading uptime: window %s is not positive", w)
		}
		longest = max(longest, w)
	}
	if days < 0 || time.Duration(days)*day > s.ret.Probes {
		return nil, fmt.Errorf("reading uptime: %d days asked, but raw probes are kept %d days (History has the older days)", days, int(s.ret.Probes/day))
	}
	if longest > s.ret.Probes {
		return nil, fmt.Errorf("reading uptime: a window of %s is longer than the %d days raw probes are kept", longest, int(s.ret.Probes/day))
	}
	from := q.Now.Add(-longest)
	if starts := watch.DayStarts(q.Now, days, loc); len(starts) > 0 && starts[0].Before(from) {
		from = starts[0]
	}
	tls, err := s.timelines(ctx, q.Datasets, from, q.Now)
	if err != nil {
		return nil, err
	}
	names := q.Datasets
	if len(names) == 0 {
		for ds := range tls {
			names = append(names, ds)
		}
	}
	names = append([]string(nil), names...)
	sort.Strings(names)
	out := make([]watch.DatasetUptime, 0, len(names))
	for i, ds := range names {
		if i > 0 && names[i-1] == ds {
			continue
		}
		out = append(out, tls[ds].Uptime(ds, q.Now, windows, days, loc))
	}
	return out, nil
}

func (s *sqlStore) History(ctx context.Context, f HistoryFilter) (History, error) {
	var h History
	filter := func() *where {
		var w where
		w.in("dataset", f.Datasets)
		if !f.Since.IsZero() {
			w.add("day >= ?", f.Since.UTC().Truncate(day).UnixMicro())
		}
		if !f.Until.IsZero() {
			w.add("day < ?", f.Until.UTC().UnixMicro())
		}
		return &w
	}
	w := filter()
	rows, err := s.query(ctx, "SELECT dataset, day, probes, "+strings.Join(strs(watch.Outcomes), ", ")+
		", confirmations, latency_sum_us, latency_max_us, up_us, degraded_us, down_us, unknown_us FROM probe_days"+w.String()+" ORDER BY dataset, day", w.args...)
	if err != nil {
		return h, fmt.Errorf("reading daily aggregates from %s: %w", s.d.describe, err)
	}
	defer rows.Close()
	for rows.Next() {
		var p ProbeDay
		var d, sum, mx, up, deg, down, unk int64
		counts := make([]int64, len(watch.Outcomes))
		dest := []any{&p.Dataset, &d, &p.Probes}
		for i := range counts {
			dest = append(dest, &counts[i])
		}
		dest = append(dest, &p.Confirmations, &sum, &mx, &up, &deg, &down, &unk)
		if err := rows.Scan(dest...); err != nil {
			return h, fmt.Errorf("reading daily aggregates from %s: %w", s.d.describe, err)
		}
		p.Day = fromUS(d)
		p.Outcomes = map[watch.Outcome]int64{}
		for i, o := range watch.Outcomes {
			if counts[i] != 0 {
				p.Outcomes[o] = counts[i]
			}
		}
		if n := p.Probes - p.Outcomes[watch.Throttled]; n > 0 {
			p.LatencyMean = usDur(sum / n)
		}
		p.LatencyMax = usDur(mx)
		p.Availability = watch.Availability{Up: usDur(up), Degraded: usDur(deg), Down: usDur(down), Unknown: usDur(unk)}
		h.Probes = append(h.Probes, p)
	}
	if err := rows.Err(); err != nil {
		return h, fmt.Errorf("reading daily aggregates from %s: %w", s.d.describe, err)
	}
	rows.Close()
	w = filter()
	erows, err := s.query(ctx, "SELECT day, kind, scope, provider, dataset, count FROM event_days"+w.String()+" ORDER BY day, kind, scope, provider, dataset", w.args...)
	if err != nil {
		return h, fmt.Errorf("reading daily event counts from %s: %w", s.d.describe, err)
	}
	defer erows.Close()
	for erows.Next() {
		var e EventDay
		var d int64
		if err := erows.Scan(&d, &e.Kind, &e.Scope, &e.Provider, &e.Dataset, &e.Count); err != nil {
			return h, fmt.Errorf("reading daily event counts from %s: %w", s.d.describe, err)
		}
		e.Day = fromUS(d)
		h.Events = append(h.Events, e)
	}
	return h, erows.Err()
}

func usDur(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
