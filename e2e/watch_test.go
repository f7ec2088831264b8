//go:build linux

package e2e

import (
	"bytes"
	"context"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
	"github.com/sluicehq/sluice/workflows"
)

// watchScale is the rate scale of the watch test: a probe every 4 minutes
// is one every 6 s, its confirmations 1.5 s apart, and a day 36 minutes.
const watchScale = 40

// watchDatasets are the test registry's datasets: two FRED series (the
// provider the test takes down), an UPBIT market and an ECOS daily rate.
const watchDatasets = `id: watch-fred-dgs10
provider: fred
request: {series_id: DGS10}
probe: {interval_minutes: 4}
---
id: watch-fred-dgs2
provider: fred
request: {series_id: DGS2}
probe: {interval_minutes: 4}
---
id: watch-upbit-krw-btc
provider: upbit
request: {market: KRW-BTC}
probe: {interval_minutes: 4}
---
id: watch-ecos-base-rate
provider: ecos
request: {stat_code: 722Y001, cycle: D, items: ["0101000"]}
probe: {interval_minutes: 4}
`

// writeWatchRegistry writes the default providers and datasets into a
// registry directory of the test's own and loads it.
func writeWatchRegistry(t *testing.T, dir, datasets string) *registry.Registry {
	t.Helper()
	providers, err := fs.ReadFile(registry.DefaultFS(), "providers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "datasets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "providers.yaml"), providers, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "datasets", "watch.yaml"), []byte(datasets), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := registry.LoadDir(dir, registry.Options{})
	if err != nil {
		t.Fatalf("loading the test registry: %v", err)
	}
	return r
}

// sluice runs the sluice binary against the cluster's Temporal namespace
// and returns its standard output.
func (c *cluster) sluice(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	cmd.Env = cleanEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("sluice %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

func (c *cluster) temporalArgs() []string {
	return []string{"--temporal", c.addr, "--namespace", c.ns, "--task-queue", c.tq}
}

// TestWatchOutage runs the watch of four datasets on a worker process: the
// simulator takes FRED down and brings it back. Both FRED datasets go down
// only after their failure is confirmed (three failed probes, two of them
// confirmations), with that evidence in their Change, and come back up
// after two answering probes; the other datasets stay up; no probe is our
// own throttling; every scope's probe calls stay within what the budget
// gate reserved for the time the test ran; and the commands show it all.
func TestWatchOutage(t *testing.T) {
	t.Parallel()
	regDir := t.TempDir()
	treg := writeWatchRegistry(t, regDir, watchDatasets)
	c := newCluster(t, clusterOptions{workers: 1, registry: treg, registryDir: regDir, rateScale: watchScale})
	ctx := context.Background()
	ids := []string{"watch-ecos-base-rate", "watch-fred-dgs10", "watch-fred-dgs2", "watch-upbit-krw-btc"}
	fred := []string{"watch-fred-dgs10", "watch-fred-dgs2"}
	interval := watch.Interval(treg.Dataset(ids[0]), watchScale)

	began := time.Now()
	out := c.sluice(append([]string{"--registry", regDir, "watch", "sync"}, c.temporalArgs()...)...)
	if !strings.Contains(out, "watches: 4 started, 0 kept, 0 stopped") {
		t.Fatalf("sync:\n%s", out)
	}
	st, err := store.Open(ctx, store.Config{DataDir: c.dataDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	states := func() map[string]watch.DatasetState {
		ss, err := st.States(ctx, time.Now(), ids...)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]watch.DatasetState{}
		for _, s := range ss {
			out[s.Dataset] = s
		}
		return out
	}
	waitState := func(what string, want watch.State, which []string) {
		t.Helper()
		waitFor(t, 90*time.Second, what, func() bool {
			if err := c.checkWorkers(); err != nil {
				t.Fatal(err)
			}
			s := states()
			for _, id := range which {
				if s[id].State != want {
					return false
				}
			}
			return true
		})
	}
	waitState("every dataset up", watch.Up, ids)

	// FRED goes down, through the simulator's control API.
	downAt := time.Now()
	postFaults(t, c.simURL, http.MethodPost, `{"provider":"fred","down":true}`)
	waitState("both FRED datasets down", watch.Down, fred)
	upAt := time.Now()
	for id, s := range states() {
		if !strings.HasPrefix(id, "watch-fred") && s.State != watch.Up {
			t.Errorf("%s is %s while FRED is down: %s", id, s.State, s.Reason)
		}
	}
	postFaults(t, c.simURL, http.MethodDelete, "")
	waitState("both FRED datasets up again", watch.Up, fred)
	elapsed := time.Since(began)

	for _, id := range fred {
		changes, err := st.Changes(ctx, store.ChangeFilter{Datasets: []string{id}, Kinds: []watch.ChangeKind{watch.ChangeState}})
		if err != nil {
			t.Fatal(err)
		}
		// Newest first: down → up, up → down, unknown → up.
		if len(changes) != 3 || changes[0].From != "down" || changes[0].To != "up" || changes[1].From != "up" || changes[1].To != "down" ||
			changes[2].To != "up" {
			t.Fatalf("%s: state changes %+v", id, changes)
		}
		down, up := changes[1], changes[0]
		if len(down.Evidence) != 3 || down.At.Before(downAt) || down.At.After(upAt) {
			t.Errorf("%s down: %d probes of evidence at %s", id, len(down.Evidence), down.At)
		}
		for i, e := range down.Evidence {
			if e.Outcome != watch.ProviderError || e.HTTPStatus != 503 || e.Confirmation != (i > 0) || e.ID == 0 {
				t.Errorf("%s down, evidence %d: %+v (want a 503; the first scheduled, the others confirmations)", id, i, e)
			}
		}
		if len(up.Evidence) != 2 || !up.Evidence[0].Outcome.Good() || !up.Evidence[1].Outcome.Good() || !up.Evidence[1].Confirmation {
			t.Errorf("%s up: evidence %+v", id, up.Evidence)
		}
	}
	// Only these state changes, no late data (the simulator publishes on
	// the declared lags), and no probe held back by our own limiter.
	all, err := st.Changes(ctx, store.ChangeFilter{Datasets: ids})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range all {
		if ch.Kind != watch.ChangeState {
			t.Errorf("unexpected Change: %s", ch.Summary)
		}
		if ch.Kind == watch.ChangeState && !strings.HasPrefix(ch.Dataset, "watch-fred") && ch.From != "unknown" {
			t.Errorf("unexpected Change: %s", ch.Summary)
		}
	}
	probes, err := st.Probes(ctx, store.ProbeFilter{Datasets: ids, Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	perDataset, confirmations := map[string]int{}, map[string]int{}
	for _, p := range probes {
		if p.Outcome.Operational() {
			t.Errorf("probe of %s at %s was %s: %s", p.Dataset, p.At, p.Outcome, p.Message)
		}
		perDataset[p.Dataset]++
		if p.Confirmation {
			confirmations[p.Dataset]++
		}
	}

	// The budget: the gate reserves ⌈1440 / interval⌉ × probe_headroom
	// probes a day per dataset, the scheduled ones and as many again for
	// confirmations. The test runs for a fraction of a (scaled) day, so it
	// checks the stricter share of it for the time it ran: per dataset,
	// its scheduled slots (one per interval, and the first) times the
	// headroom. It holds because scheduled probes keep to their grid and
	// the outage spans at least three slots (the first answered before the
	// fault, one failed, one answered after it) while it costs three
	// confirmations (two to confirm the failure, one the recovery).
	headroom := treg.Defaults.ProbeHeadroom
	slots := int(elapsed/interval) + 1
	stats := c.sim.Stats()
	checkLimits(t, stats, nil, []string{"fred", "upbit", "ecos"})
	for _, scope := range []string{"fred/key", "upbit/ip", "ecos/key"} {
		sc := stats.Scopes[scope]
		if sc == nil {
			t.Fatalf("no statistics of scope %s", scope)
		}
		calls := sc.Calls
		if scope == "fred/key" {
			// Answered 503 at the provider's edge, charged to no scope.
			calls += stats.Providers["fred"].Faults.Down
		}
		n := 0
		for _, d := range treg.Datasets {
			for _, s := range treg.ScopesFor(d.ID) {
				if s.ID == scope {
					n++
				}
			}
		}
		reserved := n * slots * headroom
		t.Logf("scope %s: %d probe calls in %s (%d slots of %s), %d reserved", scope, calls, elapsed.Round(time.Millisecond), slots, interval, reserved)
		if calls > int64(reserved) || calls == 0 {
			t.Errorf("scope %s: %d probe calls, %d reserved for %s", scope, calls, reserved, elapsed)
		}
	}
	for _, id := range ids {
		if perDataset[id] > slots*headroom || confirmations[id] > slots*(headroom-1) {
			t.Errorf("%s: %d probes (%d confirmations) recorded in %d slots", id, perDataset[id], confirmations[id], slots)
		}
	}
	if confirmations["watch-fred-dgs10"] < 3 || perDataset["watch-fred-dgs10"] < 6 {
		t.Errorf("fred-dgs10: %d probes, %d confirmations: the outage was not confirmed by confirmation probes", perDataset["watch-fred-dgs10"], confirmations["watch-fred-dgs10"])
	}

	// The watches in the Web UI's terms: readable ids, a query, bounded
	// histories.
	var longest int64
	for _, id := range ids {
		d, err := c.tc.DescribeWorkflowExecution(ctx, workflows.WatchWorkflowID(id), "")
		if err != nil {
			t.Fatal(err)
		}
		info := d.GetWorkflowExecutionInfo()
		if info.GetType().GetName() != workflows.WatchName || info.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Errorf("%s: %s %s", id, info.GetType().GetName(), info.GetStatus())
		}
		longest = max(longest, info.GetHistoryLength())
		v, err := c.tc.QueryWorkflow(ctx, workflows.WatchWorkflowID(id), "", workflows.WatchStateQuery)
		if err != nil {
			t.Fatal(err)
		}
		var ws workflows.WatchStatus
		if err := v.Get(&ws); err != nil || ws.Dataset != id || ws.Interval != interval || ws.Probes == 0 || ws.Last == nil || ws.Next.IsZero() {
			t.Errorf("%s: state query %+v, %v", id, ws, err)
		}
		t.Logf("%s: %d probes (%d confirmations), history %d events", id, perDataset[id], confirmations[id], info.GetHistoryLength())
	}
	if per := float64(longest) / float64(perDataset["watch-fred-dgs10"]); per > 15 {
		t.Errorf("%.1f history events a probe: more than the 11 or so DefaultProbesPerRun is sized for", per)
	}

	// The commands read the same store.
	table := c.sluice(append([]string{"--registry", regDir, "watch", "--data-dir", c.dataDir}, c.temporalArgs()...)...)
	for _, id := range ids {
		if !strings.Contains(table, id) {
			t.Errorf("sluice watch shows no %s:\n%s", id, table)
		}
	}
	if !strings.Contains(table, "4 datasets: 4 up; 4 watch workflows running") {
		t.Errorf("sluice watch:\n%s", table)
	}
	listed := strings.Join(strings.Fields(c.sluice(append([]string{"--registry", regDir, "changes", "--data-dir", c.dataDir, "--dataset", "watch-fred-dgs2", "--since", "1h"},
		c.temporalArgs()...)...)), " ")
	for _, want := range []string{"watch-fred-dgs2 state up → down", "watch-fred-dgs2 state down → up", "provider_error HTTP 503 (confirmation)"} {
		if !strings.Contains(listed, want) {
			t.Errorf("sluice changes lacks %q:\n%s", want, listed)
		}
	}

	// The registry stops probing one dataset: sync stops its watch only.
	writeWatchRegistry(t, regDir, strings.Replace(watchDatasets, "request: {series_id: DGS2}\nprobe: {interval_minutes: 4}\n", "request: {series_id: DGS2}\n", 1))
	out = c.sluice(append([]string{"--registry", regDir, "watch", "sync"}, c.temporalArgs()...)...)
	if !strings.Contains(out, "watches: 0 started, 3 kept, 1 stopped") || !strings.Contains(out, "watch/watch-fred-dgs2") {
		t.Errorf("sync after the registry changed:\n%s", out)
	}
	d, err := c.tc.DescribeWorkflowExecution(ctx, workflows.WatchWorkflowID("watch-fred-dgs2"), "")
	if err != nil || d.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_TERMINATED {
		t.Errorf("the stopped watch: %v %v", d.GetWorkflowExecutionInfo().GetStatus(), err)
	}
}

// postFaults sets (POST) or clears (DELETE) the simulator's faults.
func postFaults(t *testing.T, simURL, method, body string) {
	t.Helper()
	req, err := http.NewRequest(method, simURL+"/_sim/faults", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s /_sim/faults: %s", method, resp.Status)
	}
}
