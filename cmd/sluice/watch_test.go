package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
)

// fillStore records an outage of fred-dgs10 (confirmed by three probes)
// and its recovery, an answering upbit-krw-btc and a revision, under a
// data directory of the test's own.
func fillStore(t *testing.T, at time.Time) string {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := watch.ConfigFor(reg, reg.Dataset("fred-dgs10"))
	if err != nil {
		t.Fatal(err)
	}
	probe := func(ds string, off time.Duration, o watch.Outcome, status int, confirm bool) {
		t.Helper()
		p := watch.Probe{At: at.Add(off), Dataset: ds, Provider: strings.Split(ds, "-")[0], Outcome: o, HTTPStatus: status, Confirmation: confirm,
			Latency: 200 * time.Millisecond}
		if _, err := st.Observe(ctx, p, cfg); err != nil {
			t.Fatal(err)
		}
	}
	probe("fred-dgs10", 0, watch.OK, 200, false)
	probe("fred-dgs10", time.Hour, watch.ProviderError, 503, false)
	probe("fred-dgs10", time.Hour+15*time.Minute, watch.ProviderError, 503, true)
	probe("fred-dgs10", time.Hour+30*time.Minute, watch.ProviderError, 503, true)
	probe("upbit-krw-btc", time.Hour, watch.OK, 200, false)
	if _, err := st.AddChanges(ctx, watch.DetectRevisions(at.Add(2*time.Hour), "fred-dgs2", map[string]string{"2026-11-26": "4.1"}, map[string]string{"2026-11-26": "4.2"})...); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestWatchCommand(t *testing.T) {
	now := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	dir := fillStore(t, now)
	// Temporal is not there: the table comes all the same, NEXT unknown.
	out, errOut, err := runCmd(t, "watch", "--data-dir", dir, "--temporal", "127.0.0.1:1", "--provider", "fred", "--provider", "upbit")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = l
		}
	}
	if l := lines["fred-dgs10"]; !strings.Contains(l, " down ") || !strings.Contains(l, "provider_error") || !strings.Contains(l, "HTTP 503") {
		t.Errorf("fred-dgs10: %q", l)
	}
	if l := lines["upbit-krw-btc"]; !strings.Contains(l, " up ") {
		t.Errorf("upbit-krw-btc: %q", l)
	}
	// The other FRED series were never probed.
	if l := lines["fred-dgs2"]; !strings.Contains(l, "unknown") || !strings.Contains(l, "never probed") {
		t.Errorf("fred-dgs2: %q", l)
	}
	if !strings.Contains(out, "9 datasets: 1 up, 1 down, 7 unknown") || !strings.Contains(errOut, "watch workflows unknown") {
		t.Errorf("summary:\n%s\nstderr: %s", out, errOut)
	}

	// JSON, for scripts.
	out, _, err = runCmd(t, "watch", "--data-dir", dir, "--temporal", "127.0.0.1:1", "--dataset", "fred-dgs10", "--json")
	var rows []struct {
		Dataset  string      `json:"dataset"`
		State    watch.State `json:"state"`
		Provider string      `json:"provider"`
	}
	if err != nil || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 || rows[0].State != watch.Down || rows[0].Provider != "fred" {
		t.Errorf("json: %v %+v\n%s", err, rows, out)
	}

	// A reading command creates no store under a mistyped directory.
	if _, _, err := runCmd(t, "watch", "--data-dir", t.TempDir()+"/nope", "--temporal", "127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "no watch store at") {
		t.Errorf("missing store: %v", err)
	}
	if _, _, err := runCmd(t, "watch", "--data-dir", dir, "--dataset", "fred-dgs99"); err == nil || !strings.Contains(err.Error(), "fred-dgs99") {
		t.Errorf("unknown dataset: %v", err)
	}
}

func TestChangesCommand(t *testing.T) {
	now := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	dir := fillStore(t, now)
	out, _, err := runCmd(t, "changes", "--data-dir", dir, "--temporal", "127.0.0.1:1", "--since", "1d")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"fred-dgs10 state unknown → up", "fred-dgs10 state up → down", "fred-dgs2 revision 4.1 → 4.2",
		"503 (confirmation)", "HTTP 503"} {
		if !strings.Contains(flat, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Index(out, "unknown → up") > strings.Index(out, "up → down") {
		t.Errorf("not oldest first:\n%s", out)
	}
	out, _, err = runCmd(t, "changes", "--data-dir", dir, "--temporal", "127.0.0.1:1", "--dataset", "fred-dgs10", "--kind", "state", "--json")
	var changes []watch.Change
	if err != nil || json.Unmarshal([]byte(out), &changes) != nil || len(changes) != 2 || len(changes[1].Evidence) != 3 {
		t.Errorf("json: %v %+v", err, changes)
	}
	out, _, err = runCmd(t, "changes", "--data-dir", dir, "--temporal", "127.0.0.1:1", "--since", "30m")
	if err != nil || !strings.Contains(out, "no Changes") {
		t.Errorf("since 30m: %v\n%s", err, out)
	}
	for _, bad := range [][]string{{"--kind", "outage"}, {"--since", "yesterday"}, {"--limit", "0"}, {"--dataset", "nope"}} {
		if _, _, err := runCmd(t, append([]string{"changes", "--data-dir", dir}, bad...)...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                     {},
		"2026-11-30":           time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		"2026-11-30T08:00:00Z": time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC),
		"7d":                   now.AddDate(0, 0, -7),
		"90m":                  now.Add(-90 * time.Minute),
	} {
		got, err := parseWhen(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %s, %v", in, got, err)
		}
	}
	for _, bad := range []string{"7 days", "-1h", "d", "1.5d", "x7d"} {
		if _, err := parseWhen(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
