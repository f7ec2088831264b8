package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/watch"
)

// fillTimeline writes what 92 days of watching n datasets leaves behind:
// a state row each and perDay timeline marks a day (marks are written only
// when the state changes: 2 a day is a dataset our limiter starves once a
// day, 8 an outage of an hour every six hours, the worst flapping the
// confirmation lets through).
func fillTimeline(b *testing.B, s *sqlStore, n, perDay int, now time.Time) {
	b.Helper()
	ctx := context.Background()
	err := s.write(ctx, func(tx *sql.Tx) error {
		for i := 0; i < n; i++ {
			ds := fmt.Sprintf("dataset-%03d", i)
			st := watch.NeverProbed(ds)
			st.State, st.LastProbe, st.ValidUntil, st.Probes = watch.Up, now, now.Add(time.Hour), 1
			if _, err := s.exec(ctx, tx, `INSERT INTO dataset_states (dataset, state, since, reason, last_probe, last_success, newest, late, valid_until, probes, detail)
VALUES (?, 'up', 0, '', 0, 0, '', 0, 0, 1, ?)`, ds, js2(st)); err != nil {
				return err
			}
			step := 2 * day / time.Duration(perDay)
			for at := now.Add(-92 * day); at.Before(now); at = at.Add(step) {
				for k, state := range []watch.State{watch.Up, watch.Unknown} {
					m := at.Add(time.Duration(k) * step * 5 / 6)
					if _, err := s.exec(ctx, tx, "INSERT INTO timeline (dataset, at, state, until_at) VALUES (?, ?, ?, ?)", ds, us(m), string(state), us(m.Add(6*time.Hour))); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func js2(v watch.DatasetState) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func benchBackends(b *testing.B) []string {
	return []string{"sqlite:" + b.TempDir() + "/watch.db"}
}

// BenchmarkUptimeSummary is the status page's summary query: 90 daily
// bars and four windows for 200 datasets, with 2 and with 8 marks a day.
func BenchmarkUptimeSummary(b *testing.B) {
	for _, perDay := range []int{2, 8} {
		b.Run(fmt.Sprintf("marks-per-day=%d", perDay), func(b *testing.B) {
			st, err := Open(context.Background(), Config{DSN: benchBackends(b)[0]})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			now := t0.Add(100 * day)
			fillTimeline(b, st.(*sqlStore), 200, perDay, now)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				up, err := st.Uptime(context.Background(), UptimeQuery{Now: now, Days: 90})
				if err != nil || len(up) != 200 {
					b.Fatal(err, len(up))
				}
			}
		})
	}
}

// BenchmarkStates reads the state table of 200 datasets.
func BenchmarkStates(b *testing.B) {
	st, err := Open(context.Background(), Config{DSN: benchBackends(b)[0]})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	now := t0.Add(100 * day)
	fillTimeline(b, st.(*sqlStore), 200, 2, now)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if s, err := st.States(context.Background(), now); err != nil || len(s) != 200 {
			b.Fatal(err, len(s))
		}
	}
}

// BenchmarkObserve records probes of 20 datasets in turn, one goroutine.
func BenchmarkObserve(b *testing.B) {
	st, err := Open(context.Background(), Config{DSN: benchBackends(b)[0]})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	shape, _ := watch.FingerprintJSON([]byte(`{"rows":[{"date":"20261127","value":"1.5"}]}`))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := watch.Probe{At: t0.Add(time.Duration(i) * time.Second), Dataset: fmt.Sprintf("d%d", i%20), Outcome: watch.OK, Shape: shape, Newest: "20261127"}
		if i%7 == 0 {
			p.Outcome, p.Shape = watch.ProviderError, watch.Shape{}
		}
		if _, err := st.Observe(context.Background(), p, hourly); err != nil {
			b.Fatal(err)
		}
	}
}
