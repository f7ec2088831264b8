package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/watch"
)

// backend is one database under the conformance suite.
type backend struct {
	name string
	// dsn returns the DSN of a fresh, empty database.
	dsn func(t *testing.T) string
}

var backends = []backend{
	{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "watch.db") }},
	{"postgres", func(t *testing.T) string { return pgtest.Database(t) }},
}

func open(t *testing.T, dsn string, ret Retention) Store {
	t.Helper()
	s, err := Open(context.Background(), Config{DSN: dsn, Retention: ret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs every store test against SQLite and PostgreSQL.
func TestConformance(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				fn   func(t *testing.T, b backend)
			}{
				{"ObserveMatchesStep", testObserveMatchesStep},
				{"Duplicate", testDuplicate},
				{"Queries", testQueries},
				{"Validation", testValidation},
				{"Uptime", testUptime},
				{"Migrations", testMigrations},
				{"Retention", testRetention},
				{"ConcurrentWriters", testConcurrentWriters},
				{"Maintenance", testMaintenance},
			} {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, b) })
			}
		})
	}
}

var t0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

var hourly = watch.Config{
	Policy: watch.Policy{FailuresToConfirm: 3, SuccessesToConfirm: 2, ConfirmSpacing: 10 * time.Minute,
		ConfirmationsPerDay: 24, SlowAfter: 15 * time.Second, StaleAfter: 2*time.Hour + 10*time.Minute},
	Freshness: watch.Freshness{Cycle: watch.Daily, Lag: 24 * time.Hour, Weekdays: true, Tolerance: 1},
}

func shapeOf(t *testing.T, body string) watch.Shape {
	t.Helper()
	sh, err := watch.FingerprintJSON([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

// scenario generates a deterministic mix of probes for one dataset over
// hours, as a watch workflow would send them: scheduled every hour, and
// the confirmations Step asks for.
type scenario struct {
	rng     *rand.Rand
	shapes  []watch.Shape
	dataset string
}

func (sc *scenario) probe(at time.Time, confirmation bool) watch.Probe {
	p := watch.Probe{At: at, Dataset: sc.dataset, Provider: "prov", Confirmation: confirmation, Latency: 200 * time.Millisecond}
	if h := at.Sub(t0).Hours(); h >= 40 && h < 46 { // an outage
		p.Outcome, p.HTTPStatus = watch.ProviderError, 502
		return p
	}
	switch r := sc.rng.IntN(100); {
	case r < 55:
		p.Outcome, p.HTTPStatus = watch.OK, 200
		p.Shape = sc.shapes[sc.rng.IntN(len(sc.shapes))]
		p.Newest = at.Add(-time.Duration(sc.rng.IntN(5)) * 24 * time.Hour).Format("20060102")
		if sc.rng.IntN(10) == 0 {
			p.Latency = 20 * time.Second
		}
	case r < 60:
		p.Outcome, p.HTTPStatus = watch.NoData, 200
	case r < 75:
		p.Outcome, p.HTTPStatus, p.Message = watch.ProviderError, 503, "upstream unavailable"
	case r < 82:
		p.Outcome, p.Message = watch.Network, "connection reset"
	case r < 88:
		p.Outcome, p.HTTPStatus = watch.RateLimited, 429
	default:
		p.Outcome = watch.Throttled
	}
	return p
}

// testObserveMatchesStep: the store's states, Changes, events and uptime
// are exactly what the pure watch.Step and watch.Timeline compute from the
// same probes.
func testObserveMatchesStep(t *testing.T, b backend) {
	s := open(t, b.dsn(t), Retention{})
	ctx := context.Background()
	shapes := []watch.Shape{
		shapeOf(t, `{"rows":[{"date":"20261127","value":"1.5"}]}`),
		shapeOf(t, `{"rows":[{"date":"20261127","value":1.5}]}`),
		shapeOf(t, `{"rows":[{"date":"20261127","value":"1.5","unit":"%"}]}`),
	}
	var now time.Time
	for _, ds := range []string{"alpha", "beta"} {
		sc := &scenario{rng: rand.New(rand.NewPCG(7, uint64(len(ds)))), shapes: shapes, dataset: ds}
		var pure watch.DatasetState
		var tl watch.Timeline
		var wantChanges []watch.Change
		var wantEvents int
		observe := func(p watch.Probe) watch.Result {
			got, err := s.Observe(ctx, p, hourly)
			if err != nil {
				t.Fatal(err)
			}
			p.ID = got.Probe.ID
			want := watch.Step(hourly, pure, p)
			pure = want.State
			tl = tl.Apply(want.Marks, want.State.ValidUntil)
			wantChanges = append(wantChanges, want.Changes...)
			wantEvents += len(want.Events)
			if a, b := js(t, got.State), js(t, want.State); a != b {
				t.Fatalf("%s probe %d: store state\n%s\nwant\n%s", ds, p.ID, a, b)
			}
			if got.Confirm != want.Confirm || len(got.Changes) != len(want.Changes) {
				t.Fatalf("%s probe %d: confirm %+v changes %d, want %+v %d", ds, p.ID, got.Confirm, len(got.Changes), want.Confirm, len(want.Changes))
			}
			for _, c := range got.Changes {
				if c.ID == 0 {
					t.Fatalf("change without an id: %+v", c)
				}
			}
			return got
		}
		for hour := 0; hour < 96; hour++ {
			at := t0.Add(time.Duration(hour)*time.Hour + time.Duration(len(ds))*time.Second)
			res := observe(sc.probe(at, false))
			for res.Confirm.Wanted() {
				res = observe(sc.probe(res.Confirm.At, true))
			}
			now = at.Add(30 * time.Minute)
		}
		// Changes, newest first, as the pure run produced them.
		got, err := s.Changes(ctx, ChangeFilter{Datasets: []string{ds}, Limit: MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(wantChanges) {
			t.Fatalf("%s: %d changes, want %d", ds, len(got), len(wantChanges))
		}
		kinds := map[watch.ChangeKind]int{}
		for i, c := range got {
			w := wantChanges[len(wantChanges)-1-i]
			c.ID = 0
			if a, b := js(t, c), js(t, w); a != b {
				t.Fatalf("%s change %d:\n%s\nwant\n%s", ds, i, a, b)
			}
			kinds[c.Kind]++
		}
		if kinds[watch.ChangeState] == 0 || kinds[watch.ChangeShape] == 0 {
			t.Errorf("%s: the scenario produced %v; want state and shape changes at least", ds, kinds)
		}
		evs, err := s.Events(ctx, EventFilter{Datasets: []string{ds}, Limit: MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != wantEvents || wantEvents == 0 {
			t.Errorf("%s: %d events, want %d", ds, len(evs), wantEvents)
		}
		// Uptime from the SQL timeline equals the pure timeline's.
		seoul, _ := time.LoadLocation("Asia/Seoul")
		for _, loc := range []*time.Location{time.UTC, seoul} {
			up, err := s.Uptime(ctx, UptimeQuery{Datasets: []string{ds}, Now: now, Days: 10, Location: loc})
			if err != nil {
				t.Fatal(err)
			}
			want := tl.Uptime(ds, now, watch.DefaultWindows, 10, loc)
			if a, b := js(t, up), js(t, []watch.DatasetUptime{want}); a != b {
				t.Fatalf("%s uptime in %s:\n%s\nwant\n%s", ds, loc, a, b)
			}
			if want.Windows[1].Down == 0 || want.Windows[1].Up == 0 || want.Windows[1].Unknown == 0 {
				t.Errorf("%s: the scenario should have up, down and unknown time: %+v", ds, want.Windows[1])
			}
		}
		states, err := s.States(ctx, now, ds)
		if err != nil {
			t.Fatal(err)
		}
		if len(states) != 1 || js(t, states[0]) != js(t, pure.Current(now)) {
			t.Errorf("%s: States = %+v", ds, states)
		}
	}
}

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testDuplicate: the same probe observed twice (a retried activity) counts
// once.
func testDuplicate(t *testing.T, b backend) {
	s := open(t, b.dsn(t), Retention{})
	ctx := context.Background()
	p := watch.Probe{At: t0.Add(123456789 * time.Nanosecond), Dataset: "ds", Outcome: watch.ProviderError, HTTPStatus: 500}
	first, err := s.Observe(ctx, p, hourly)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Observe(ctx, p, hourly)
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate || !again.Duplicate || again.State.Probes != 1 || len(again.State.Streak) != 1 {
		t.Errorf("first %+v\nagain %+v", first, again)
	}
	if !again.Confirm.Wanted() || again.Confirm != first.Confirm {
		t.Errorf("the duplicate's confirmation %+v, want the first's %+v", again.Confirm, first.Confirm)
	}
	probes, err := s.Probes(ctx, ProbeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) != 1 || !probes[0].At.Equal(t0.Add(123456*time.Microsecond)) {
		t.Errorf("probes %+v", probes)
	}
}

func testQueries(t *testing.T, b backend) {
	s := open(t, b.dsn(t), Retention{})
	ctx := context.Background()
	shape := shapeOf(t, `{"a":1,"b":"x"}`)
	for i, ds := range []string{"b-ds", "a-ds", "c-ds"} {
		for j := 0; j < 4; j++ {
			p := watch.Probe{At: t0.Add(time.Duration(j)*time.Hour + time.Duration(i)*time.Minute), Dataset: ds, Provider: "prov",
				Outcome: watch.OK, HTTPStatus: 200, Latency: time.Duration(j+1) * time.Millisecond, Shape: shape, Newest: "20261127"}
			if j == 2 {
				p.Outcome, p.Shape, p.Newest, p.Message = watch.Throttled, watch.Shape{}, "", "held back"
			}
			if _, err := s.Observe(ctx, p, hourly); err != nil {
				t.Fatal(err)
			}
		}
	}
	now := t0.Add(4 * time.Hour)
	states, err := s.States(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 3 || states[0].Dataset != "a-ds" || states[2].Dataset != "c-ds" {
		t.Fatalf("states %+v", states)
	}
	st := states[0]
	if st.State != watch.Up || !st.LastSuccess.Equal(t0.Add(3*time.Hour+time.Minute)) || st.Newest != "2026-11-27" || !st.Since.Equal(t0.Add(3*time.Hour+time.Minute)) {
		t.Errorf("a-ds: %+v", st)
	}
	states, err = s.States(ctx, now, "c-ds", "never")
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 2 || states[1].Dataset != "never" || states[1].State != watch.Unknown || states[1].Reason != "never probed" {
		t.Errorf("named states %+v", states)
	}
	// Lapsed: nothing probed for longer than StaleAfter.
	states, _ = s.States(ctx, now.Add(3*time.Hour), "a-ds")
	if states[0].State != watch.Unknown {
		t.Errorf("lapsed state %+v", states[0])
	}

	probes, err := s.Probes(ctx, ProbeFilter{Datasets: []string{"b-ds"}, WithShapes: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) != 4 || !probes[0].At.After(probes[3].At) {
		t.Fatalf("probes newest first: %+v", probes)
	}
	if p := probes[3]; p.Shape.Fingerprint() != shape.Fingerprint() || p.Latency != time.Millisecond || p.HTTPStatus != 200 || p.Provider != "prov" || p.Newest != "20261127" || p.ID == 0 {
		t.Errorf("probe %+v", p)
	}
	if p := probes[1]; p.Outcome != watch.Throttled || p.Message != "held back" || !p.Shape.Empty() {
		t.Errorf("throttled probe %+v", p)
	}
	probes, _ = s.Probes(ctx, ProbeFilter{Outcomes: []watch.Outcome{watch.Throttled}, Since: t0.Add(2 * time.Hour), Until: t0.Add(2*time.Hour + 2*time.Minute)})
	if len(probes) != 2 || !probes[0].Shape.Empty() {
		t.Errorf("throttled between: %+v", probes)
	}
	probes, _ = s.Probes(ctx, ProbeFilter{Limit: 5})
	if len(probes) != 5 {
		t.Errorf("limit 5: %d", len(probes))
	}
	if _, err := s.Probes(ctx, ProbeFilter{Limit: -1}); err == nil {
		t.Error("negative limit")
	}

	changes, err := s.Changes(ctx, ChangeFilter{Kinds: []watch.ChangeKind{watch.ChangeState}})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 3 || changes[0].Dataset != "c-ds" || len(changes[0].Evidence) != 1 {
		t.Errorf("state changes %+v", changes)
	}
	added, err := s.AddChanges(ctx, watch.DetectRevisions(t0.Add(5*time.Hour), "a-ds", map[string]string{"2026-11-26": "1.0", "2026-11-27": "2"}, map[string]string{"2026-11-26": "1.1", "2026-11-27": "2.0"})...)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 1 || added[0].ID == 0 {
		t.Fatalf("added %+v", added)
	}
	changes, _ = s.Changes(ctx, ChangeFilter{Datasets: []string{"a-ds"}, Since: t0.Add(5 * time.Hour)})
	if len(changes) != 1 || changes[0].Kind != watch.ChangeRevision || changes[0].Period != "2026-11-26" || changes[0].From != "1.0" || changes[0].To != "1.1" {
		t.Errorf("revisions since +5h: %+v", changes)
	}
	changes, _ = s.Changes(ctx, ChangeFilter{Datasets: []string{"a-ds", "b-ds"}, Until: t0.Add(5 * time.Hour)})
	if len(changes) != 2 {
		t.Errorf("a and b before +5h: %+v", changes)
	}

	if err := s.AddEvents(ctx,
		watch.Event{Kind: "ratelimit.backoff", At: t0.Add(6 * time.Hour), Scope: "kis/key", Provider: "kis", Message: "halved", Attrs: map[string]string{"factor": "0.5"}},
		watch.Event{Kind: "quota.exhausted", At: t0.Add(7 * time.Hour), Scope: "ecos/key", Message: "1000 used"},
	); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, EventFilter{Kinds: []string{"ratelimit.backoff"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Attrs["factor"] != "0.5" || !evs[0].At.Equal(t0.Add(6*time.Hour)) || evs[0].Scope != "kis/key" {
		t.Errorf("backoff events %+v", evs)
	}
	evs, _ = s.Events(ctx, EventFilter{Since: t0.Add(6*time.Hour + time.Minute)})
	if len(evs) != 1 || evs[0].Kind != "quota.exhausted" {
		t.Errorf("events since: %+v", evs)
	}
	evs, _ = s.Events(ctx, EventFilter{Kinds: []string{watch.KindProbeThrottled}, Datasets: []string{"a-ds"}})
	if len(evs) != 1 {
		t.Errorf("throttled probes of a-ds: %+v", evs)
	}
	evs, _ = s.Events(ctx, EventFilter{Scopes: []string{"ecos/key"}})
	if len(evs) != 1 {
		t.Errorf("ecos/key events: %+v", evs)
	}
}

func testValidation(t *testing.T, b backend) {
	s := open(t, b.dsn(t), Retention{})
	ctx := context.Background()
	for _, p := range []watch.Probe{
		{Dataset: "", At: t0, Outcome: watch.OK},
		{Dataset: "ds", Outcome: watch.OK},
		{Dataset: "ds", At: t0, Outcome: "up"},
		{Dataset: "ds", At: t0, Outcome: watch.OK, HTTPStatus: 1000},
		{Dataset: "ds", At: t0, Outcome: watch.OK, Latency: -time.Nanosecond},
		{Dataset: "ds", At: time.Date(1970, 1, 1, 0, 0, 0, 1000, time.UTC), Outcome: watch.OK},
	} {
		if _, err := s.Observe(ctx, p, hourly); err == nil {
			t.Errorf("observed %+v", p)
		}
	}
	if _, err := s.AddChanges(ctx, watch.Change{Dataset: "ds", Kind: "nope", At: t0}); err == nil {
		t.Error("added a change of an unknown kind")
	}
	if err := s.AddEvents(ctx, watch.Event{At: t0}); err == nil {
		t.Error("added an event without a kind")
	}
	// Text is kept as valid UTF-8 and cut to its limit.
	long := strings.Repeat("가", 1000) + "\xff"
	res, err := s.Observe(ctx, watch.Probe{Dataset: "ds", At: t0, Outcome: watch.ProviderError, Message: long, Newest: long}, hourly)
	if err != nil {
		t.Fatal(err)
	}
	probes, _ := s.Probes(ctx, ProbeFilter{})
	if len(probes) != 1 || len(probes[0].Message) > watch.MaxMessageBytes || !strings.HasSuffix(probes[0].Message, "…") || res.Probe.Message != probes[0].Message {
		t.Errorf("message %d bytes", len(probes[0].Message))
	}
	nothing, err := s.Probes(ctx, ProbeFilter{Datasets: []string{"x' OR '1'='1"}})
	if err != nil || len(nothing) != 0 {
		t.Errorf("quoted dataset: %v %v", nothing, err)
	}
}

func testUptime(t *testing.T, b backend) {
	s := open(t, b.dsn(t), Retention{})
	ctx := context.Background()
	// ds-1 is up; ds-2 goes down at +2h and stays down.
	for hour := 0; hour < 6; hour++ {
		at := t0.Add(time.Duration(hour) * time.Hour)
		if _, err := s.Observe(ctx, watch.Probe{At: at, Dataset: "ds-1", Outcome: watch.OK}, hourly); err != nil {
			t.Fatal(err)
		}
		o := watch.OK
		if hour >= 2 {
			o = watch.Network
		}
		if _, err := s.Observe(ctx, watch.Probe{At: at, Dataset: "ds-2", Outcome: o}, hourly); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(6 * time.Hour)
	up, err := s.Uptime(ctx, UptimeQuery{Now: now, Days: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(up) != 2 || up[0].Dataset != "ds-1" || len(up[0].Days) != 2 || len(up[0].Windows) != 4 {
		t.Fatalf("uptime %+v", up)
	}
	if d := up[0].Days[1]; d.Up != 6*time.Hour || d.Down != 0 {
		t.Errorf("ds-1 today %+v", d.Availability)
	}
	// Down from the first failure (+2h) on, three failures confirming.
	if d := up[1].Days[1]; d.Up != 2*time.Hour || d.Down != 4*time.Hour {
		t.Errorf("ds-2 today %+v", d.Availability)
	}
	if r, ok := up[1].Windows[0].Uptime(); !ok || r != 2.0/6.0 {
		t.Errorf("ds-2 24h uptime %v %v", r, ok)
	}
	// A dataset asked for by name with no timeline is all unknown.
	up, err = s.Uptime(ctx, UptimeQuery{Now: now, Days: 1, Datasets: []string{"none", "ds-1"}, Windows: []time.Duration{time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	if len(up) != 2 || up[1].Dataset != "none" || up[1].Windows[0].Unknown != time.Hour || up[0].Windows[0].Up != time.Hour {
		t.Errorf("named uptime %+v", up)
	}
	if _, err := s.Uptime(ctx, UptimeQuery{Now: now, Days: 100}); err == nil || !strings.Contains(err.Error(), "92 days") {
		t.Errorf("100 days: %v", err)
	}
	if _, err := s.Uptime(ctx, UptimeQuery{Now: now, Windows: []time.Duration{100 * day}}); err == nil {
		t.Error("a window longer than retention")
	}
	if _, err := s.Uptime(ctx, UptimeQuery{}); err == nil {
		t.Error("no time")
	}
}

func testMigrations(t *testing.T, b backend) {
	dsn := b.dsn(t)
	s := open(t, dsn, Retention{})
	s.Close()
	s = open(t, dsn, Retention{}) // again: nothing to apply
	ss := s.(*sqlStore)
	ctx := context.Background()
	var n, v int
	if err := ss.db.QueryRowContext(ctx, "SELECT COUNT(*), MAX(version) FROM schema_migrations").Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != len(migrations) || v != SchemaVersion {
		t.Errorf("schema_migrations: %d rows, version %d", n, v)
	}
	// A database a newer sluice migrated is refused, not downgraded.
	if _, err := ss.db.ExecContext(ctx, ss.d.rebind("INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, 'future', 'x', 0)"), SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, Config{DSN: dsn}); err == nil || !strings.Contains(err.Error(), "newer than this sluice knows") {
		t.Errorf("newer schema: %v", err)
	}
	if _, err := ss.db.ExecContext(ctx, ss.d.rebind("DELETE FROM schema_migrations WHERE version = ?"), SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	// An applied migration whose text changed is refused.
	if _, err := ss.db.ExecContext(ctx, "UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, Config{DSN: dsn}); err == nil || !strings.Contains(err.Error(), "never edited once released") {
		t.Errorf("edited migration: %v", err)
	}
}

// testRetention drives 120 days of hourly probes with an outage and
// throttling, compacts as of the last day, and checks that raw rows older
// than the retention are gone, their daily aggregates kept with the right
// counts, the uptime of the last 90 days unchanged, and Changes kept.
func testRetention(t *testing.T, b backend) {
	s := open(t, b.dsn(t), Retention{})
	ctx := context.Background()
	cfg := hourly
	cfg.Policy.StaleAfter = 5 * time.Hour // the scenario probes every 4 hours
	start := t0
	const days = 120
	probesPerDay := map[int]int{}
	for h := 0; h < days*24; h += 4 {
		at := start.Add(time.Duration(h) * time.Hour)
		d := h / 24
		o := watch.OK
		switch {
		case d == 10 && h%24 >= 8: // an outage on day 10 from 08:00
			o = watch.ProviderError
		case d == 11 && h%24 < 8:
			o = watch.ProviderError
		case d == 20:
			o = watch.Throttled
		}
		if _, err := s.Observe(ctx, watch.Probe{At: at, Dataset: "ds", Outcome: o, Latency: 100 * time.Millisecond}, cfg); err != nil {
			t.Fatal(err)
		}
		probesPerDay[d]++
	}
	if err := s.AddEvents(ctx, watch.Event{Kind: "quota.exhausted", At: start.Add(5 * day), Scope: "s"}, watch.Event{Kind: "quota.exhausted", At: start.Add(5*day + time.Hour), Scope: "s"},
		watch.Event{Kind: "quota.exhausted", At: start.Add(119 * day), Scope: "s"}); err != nil {
		t.Fatal(err)
	}
	now := start.Add(days*day - time.Hour)
	before, err := s.Uptime(ctx, UptimeQuery{Now: now, Days: 90})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Compact(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	// Cutoff: midnight UTC of now − 92 days = day 27 from the start.
	cut := utcDay(now.Add(-DefaultRetention.Probes))
	cutDay := int(cut.Sub(start) / day)
	if cutDay != 27 {
		t.Fatalf("cutoff day %d", cutDay)
	}
	wantProbes := int64(0)
	for d := 0; d < cutDay; d++ {
		wantProbes += int64(probesPerDay[d])
	}
	// Events: the two added, and the six probe.throttled of day 20.
	if res.Days != cutDay || res.Probes != wantProbes || res.Events != 8 || res.Marks == 0 {
		t.Errorf("compacted %+v, want %d days, %d probes, 8 events", res, cutDay, wantProbes)
	}
	raw, err := s.Probes(ctx, ProbeFilter{Until: cut, Limit: MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 0 {
		t.Errorf("%d raw probes older than the cutoff remain", len(raw))
	}
	kept, _ := s.Probes(ctx, ProbeFilter{Since: cut, Limit: MaxLimit})
	if len(kept) != days*6-int(wantProbes) {
		t.Errorf("%d raw probes kept, want %d", len(kept), days*6-int(wantProbes))
	}
	after, err := s.Uptime(ctx, UptimeQuery{Now: now, Days: 90})
	if err != nil {
		t.Fatal(err)
	}
	if js(t, before) != js(t, after) {
		t.Errorf("uptime of the last 90 days changed by compaction:\n%s\n%s", js(t, before), js(t, after))
	}
	h, err := s.History(ctx, HistoryFilter{Datasets: []string{"ds"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Probes) != cutDay {
		t.Fatalf("%d daily aggregates, want %d", len(h.Probes), cutDay)
	}
	d10 := h.Probes[10]
	if !d10.Day.Equal(start.Add(10*day)) || d10.Probes != 6 || d10.Outcomes[watch.ProviderError] != 4 || d10.Outcomes[watch.OK] != 2 || d10.LatencyMean != 100*time.Millisecond {
		t.Errorf("day 10: %+v", d10)
	}
	// Down from 08:00 (the first failure) to the end of the day.
	if d10.Down != 16*time.Hour || d10.Up != 8*time.Hour {
		t.Errorf("day 10 availability %+v", d10.Availability)
	}
	if d11 := h.Probes[11]; d11.Down != 8*time.Hour || d11.Up != 16*time.Hour {
		t.Errorf("day 11 availability %+v", d11.Availability)
	}
	// Day 20's probes were all held back by our limiter: unknown, not down.
	if d20 := h.Probes[20]; d20.Unknown != 24*time.Hour || d20.Down != 0 || d20.Outcomes[watch.Throttled] != 6 {
		t.Errorf("day 20 %+v", d20)
	}
	if d0 := h.Probes[0]; d0.Up != 24*time.Hour {
		t.Errorf("day 0 %+v", d0.Availability)
	}
	if len(h.Events) != 1 || h.Events[0].Kind != watch.KindProbeThrottled {
		t.Errorf("event days of ds: %+v", h.Events)
	}
	h, _ = s.History(ctx, HistoryFilter{}) // every dataset, and events of none
	if len(h.Events) != 2 || h.Events[0].Count != 2 || h.Events[0].Kind != "quota.exhausted" || !h.Events[0].Day.Equal(start.Add(5*day)) ||
		h.Events[1].Count != 6 || h.Events[1].Kind != watch.KindProbeThrottled || !h.Events[1].Day.Equal(start.Add(20*day)) {
		t.Errorf("event days %+v", h.Events)
	}
	h, _ = s.History(ctx, HistoryFilter{Since: start.Add(10*day + time.Hour), Until: start.Add(12 * day)})
	if len(h.Probes) != 2 || len(h.Events) != 0 {
		t.Errorf("history of days 10 and 11: %+v", h)
	}
	changes, _ := s.Changes(ctx, ChangeFilter{Kinds: []watch.ChangeKind{watch.ChangeState}, Limit: MaxLimit})
	if len(changes) != 3 { // unknown→up, up→down, down→up: changes are kept
		t.Errorf("changes %+v", changes)
	}
	// Compacting again does nothing; nor does a clock that jumped a year
	// ahead delete the last 92 days of raw probes.
	again, err := s.Compact(ctx, now)
	if err != nil || again != (Compacted{}) {
		t.Errorf("second compaction %+v %v", again, err)
	}
	jumped, err := s.Compact(ctx, now.Add(365*day))
	if err != nil || jumped.Probes != 0 {
		t.Errorf("compaction with the clock a year ahead: %+v %v", jumped, err)
	}
	if _, err := Open(ctx, Config{DSN: b.dsn(t), Retention: Retention{Probes: 30 * day}}); err == nil || !strings.Contains(err.Error(), "90") {
		t.Errorf("30-day retention: %v", err)
	}
}

// testConcurrentWriters: goroutines on two stores over one database
// (two workers) observe probes of shared datasets at once; nothing is
// lost and every state saw every probe.
func testConcurrentWriters(t *testing.T, b backend) {
	dsn := b.dsn(t)
	stores := []Store{open(t, dsn, Retention{}), open(t, dsn, Retention{})}
	ctx := context.Background()
	const goroutines, perG = 8, 25
	datasets := []string{"d0", "d1", "d2"}
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		go func(g int) {
			s := stores[g%2]
			for i := 0; i < perG; i++ {
				o := watch.OK
				if i%3 == 0 {
					o = watch.ProviderError
				}
				p := watch.Probe{At: t0.Add(time.Duration(i*goroutines+g) * time.Second), Dataset: datasets[(g+i)%len(datasets)], Outcome: o}
				if i%5 == 0 {
					if err := s.AddEvents(ctx, watch.Event{Kind: "test", At: p.At, Dataset: p.Dataset}); err != nil {
						errs <- err
						return
					}
				}
				if _, err := s.Observe(ctx, p, hourly); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(g)
	}
	for g := 0; g < goroutines; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	probes, err := stores[0].Probes(ctx, ProbeFilter{Limit: MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) != goroutines*perG {
		t.Errorf("%d probes recorded, want %d", len(probes), goroutines*perG)
	}
	states, err := stores[1].States(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, st := range states {
		total += st.Probes
	}
	if total != goroutines*perG {
		t.Errorf("states stepped %d probes, want %d (a lost update)", total, goroutines*perG)
	}
	evs, _ := stores[0].Events(ctx, EventFilter{Kinds: []string{"test"}, Limit: MaxLimit})
	if len(evs) != goroutines*5 {
		t.Errorf("%d events, want %d", len(evs), goroutines*5)
	}
}

func TestParseDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn    string
		kind   Kind
		target string
	}{
		{"postgres://u:secret@db:5432/sluice?sslmode=disable", Postgres, "postgres://u:secret@db:5432/sluice?sslmode=disable"},
		{"postgresql://db/sluice", Postgres, "postgresql://db/sluice"},
		{"sqlite:/var/lib/sluice/watch/watch.db", SQLite, "/var/lib/sluice/watch/watch.db"},
		{"sqlite://var/w.db", SQLite, "var/w.db"},
		{"sqlite:./var/watch.db", SQLite, "./var/watch.db"},
	} {
		k, target, err := ParseDSN(tc.dsn)
		if err != nil || k != tc.kind || target != tc.target {
			t.Errorf("%s: %s %s %v", tc.dsn, k, target, err)
		}
	}
	for _, dsn := range []string{"", "mysql://x/y", "postgres://u:secret@/", "postgres://u:secret@db", "sqlite:", "sqlite:a.db?mode=ro", "sqlite::memory:", "/plain/path.db", "host=db password=secret"} {
		_, _, err := ParseDSN(dsn)
		if err == nil {
			t.Errorf("%q accepted", dsn)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error shows the password: %v", dsn, err)
		}
	}
	if got := Describe("postgres://u:secret@db:5432/sluice"); strings.Contains(got, "secret") {
		t.Errorf("Describe = %s", got)
	}
}

func TestOpenDataDir(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mode string
	if err := s.(*sqlStore).db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode %q %v", mode, err)
	}
	if _, err := Open(context.Background(), Config{}); err == nil {
		t.Error("opened a store with neither DSN nor data directory")
	}
	if _, err := sql.Open("sqlite", SQLitePath(dir)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(SQLitePath(dir), filepath.Join("watch", "watch.db")) {
		t.Error(SQLitePath(dir))
	}
}

// TestRetryable: a busy SQLite database and a PostgreSQL deadlock are
// retried; other errors are not.
func TestRetryable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	c1, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	tx1, err := c1.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	_, busy := c2.BeginTx(ctx, nil)
	if busy == nil || !sqliteRetryable(busy) {
		t.Errorf("a second writer got %v; want a retryable SQLITE_BUSY", busy)
	}
	if sqliteRetryable(fmt.Errorf("x")) || postgresRetryable(fmt.Errorf("x")) {
		t.Error("a plain error is retryable")
	}
	if !postgresRetryable(fmt.Errorf("committing: %w", &pgconn.PgError{Code: "40P01"})) || postgresRetryable(&pgconn.PgError{Code: "23505"}) {
		t.Error("PostgreSQL codes misjudged")
	}
}

func TestPostgresConnectTimeout(t *testing.T) {
	if got := withConnectTimeout("postgres://u@h/db?sslmode=disable"); got != "postgres://u@h/db?connect_timeout=10&sslmode=disable" {
		t.Errorf("added: %s", got)
	}
	if got := withConnectTimeout("postgres://u@h/db?connect_timeout=3"); got != "postgres://u@h/db?connect_timeout=3" {
		t.Errorf("kept: %s", got)
	}
	// A server that is not there fails the open, naming it without the
	// password.
	_, err := Open(context.Background(), Config{DSN: "postgres://u:hunter2@127.0.0.1:1/db?sslmode=disable"})
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("open of a closed port: %v", err)
	}
}
