//go:build linux

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/workflows"
)

// TestFullRegistry ingests the whole default registry for one date with
// one worker process: every dataset ok or no data, zero violations, every
// object present and equal to the simulator's bytes.
func TestFullRegistry(t *testing.T) {
	c := newCluster(t, clusterOptions{workers: 1})
	date := logicalDate()
	plan := planned()
	res := c.runBatch(workflows.DailyIngestInput{Date: date})
	stats := c.sim.Stats()
	results := byDataset(t, res, date, plan)
	checkSucceeded(t, results, nil)
	checkEveryProviderStored(t, results, providersOf(plan))
	// data.go.kr's service 15094807 (three datasets, a 2 s minimum
	// interval) puts the gap check to work.
	if checkLimits(t, stats, nil, providersOf(plan)) == 0 {
		t.Error("no scope with a minimum interval saw two calls: the gap check checked nothing")
	}
	c.checkLake(results, date, nil)
}

// TestThreeWorkers runs the whole registry on three worker processes
// sharing one Temporal, one simulator and an S3 lake (versitygw): zero
// violations and every scope's busiest window within its declared count
// although three processes call each scope; every worker took part, and
// the calls the workers counted add up to the calls the simulator saw.
func TestThreeWorkers(t *testing.T) {
	c := newCluster(t, clusterOptions{workers: 3, s3: true, metrics: true})
	date := logicalDate()
	plan := planned()
	res := c.runBatch(workflows.DailyIngestInput{Date: date})
	stats := c.sim.Stats()
	results := byDataset(t, res, date, plan)
	checkSucceeded(t, results, nil)
	checkEveryProviderStored(t, results, providersOf(plan))
	checkLimits(t, stats, nil, providersOf(plan))

	total := map[string]int64{}
	for _, w := range c.workers {
		calls := c.scrapeCalls(w)
		var n int64
		for scope, v := range calls {
			total[scope] += v
			n += v
		}
		if n == 0 {
			t.Errorf("%s sent no provider call", w.name)
		}
		t.Logf("%s sent %d provider calls", w.name, n)
	}
	for _, id := range sortedKeys(stats.Scopes) {
		if got, want := total[id], stats.Scopes[id].Calls; got != want {
			t.Errorf("scope %s: the workers counted %d calls, the simulator %d", id, got, want)
		}
	}
	c.checkLake(results, date, nil)
}

// TestWorkerKilled SIGKILLs one of three workers while it writes an object
// (a slowed data.go.kr body keeps the write open): the batch completes on
// the other two, the interrupted dataset is retried and stored whole, the
// lake holds one object per key and nothing else but the killed process's
// orphaned temporary files, which no reader sees (and which the surviving
// workers sweep once they are stale).
func TestWorkerKilled(t *testing.T) {
	t.Parallel()
	// data.go.kr bodies are 35 to 60 KB: at 3 KB/s each write stays open
	// for 10 to 20 s. fsc-stock-market-index's is 450 KB: at 3 KB/s its
	// write (and its retry when the kill hit it) kept the batch running
	// for minutes after every other dataset was done; at 30 KB/s it stays
	// open for about 15 s like the others.
	slow := []simulator.Fault{
		{Provider: "datago", Dataset: "fsc-stock-market-index", SlowBody: 30000},
		{Provider: "datago", Dataset: "fsc-bond-market-index", SlowBody: 3000},
		{Provider: "datago", Dataset: "fsc-derivative-market-index", SlowBody: 3000},
		{Provider: "datago", Dataset: "visitkorea-tourism", SlowBody: 3000},
	}
	c := newCluster(t, clusterOptions{workers: 3, faults: slow})
	date := logicalDate()
	plan := planned()
	lakeRoot := filepath.Join(c.dataDir, "lake")
	run := c.start(workflows.DailyIngestInput{Date: date})

	waitFor(t, 2*time.Minute, "30% of the batch done", func() bool {
		if err := c.checkWorkers(); err != nil {
			t.Fatal(err)
		}
		p := c.progress(run)
		return p.Total > 0 && p.Done*10 >= p.Total*3
	})
	// Only the slowed writes stay open long enough to be sure the kill
	// interrupts them; others finish within milliseconds of being seen.
	slowDir := filepath.Join(lakeRoot, "provider=datago") + string(filepath.Separator)
	var victim *workerProc
	var writing []string
	waitFor(t, time.Minute, "a worker writing a data.go.kr object", func() bool {
		for _, w := range c.workers {
			for _, p := range openTemps(w, lakeRoot) {
				if strings.HasPrefix(p, slowDir) {
					writing = append(writing, p)
				}
			}
			if len(writing) > 0 {
				victim = w
				return true
			}
		}
		return false
	})
	before := c.progress(run)
	c.kill(victim)
	_, atKill := c.localFiles()
	lastWrite := map[string]time.Time{} // the killed writes' files' mtimes
	for _, p := range writing {
		if fi, err := os.Stat(p); err == nil {
			lastWrite[p] = fi.ModTime()
		}
	}
	t.Logf("killed %s (pid %d) at %d/%d datasets done while it wrote %v", victim.name, victim.pid(), before.Done, before.Total, writing)
	if before.Done >= before.Total {
		t.Errorf("the batch was done (%+v) before the kill", before)
	}
	for _, p := range writing {
		if !slices.Contains(atKill, p) {
			t.Fatalf("%s was gone right after the kill: the write it belonged to finished first", p)
		}
	}

	res := c.wait(run)
	stats := c.sim.Stats()
	results := byDataset(t, res, date, plan)
	checkSucceeded(t, results, nil)
	checkLimits(t, stats, nil, providersOf(plan))

	// The interrupted writes were retried elsewhere.
	for _, p := range writing {
		id := datasetOfPath(lakeRoot, p)
		if r := results[id]; r.Status != workflows.StatusOK || r.Attempts < 2 {
			t.Errorf("%s, interrupted while writing, ended %s after %d attempts; want ok after a retry", id, r.Status, r.Attempts)
		}
	}
	// Every temporary file left now is one the killed worker left: the
	// others finished every write.
	_, left := c.localFiles()
	orphans := map[string]bool{}
	for _, p := range left {
		if !slices.Contains(atKill, p) {
			t.Errorf("temporary file %s appeared after the kill and was left behind", p)
		}
		orphans[p] = true
	}
	for _, p := range writing {
		// The surviving workers sweep it once it is stale
		// (sink.StaleTempAge after its last write), never before.
		if !orphans[p] && time.Since(lastWrite[p]) < sink.StaleTempAge {
			t.Errorf("the killed worker's temporary file %s is gone %s after its last write, before it was stale; who removed it?", p, time.Since(lastWrite[p]).Round(time.Millisecond))
		}
	}
	c.checkLake(results, date, orphans)
}

// TestProviderDown runs the whole registry with FRED answering 503 to
// everything: FRED's datasets fail, after the retry policy's attempts,
// with a reason naming the outage; every other dataset succeeds.
func TestProviderDown(t *testing.T) {
	t.Parallel()
	c := newCluster(t, clusterOptions{workers: 1, faults: []simulator.Fault{{Provider: "fred", Down: true}}})
	date := logicalDate()
	plan := planned()
	res := c.runBatch(workflows.DailyIngestInput{Date: date})
	stats := c.sim.Stats()
	results := byDataset(t, res, date, plan)
	isFred := func(id string) bool { return reg.Dataset(id).Provider == "fred" }
	checkSucceeded(t, results, isFred)
	var others []string
	fred := 0
	for _, id := range plan {
		if isFred(id) {
			fred++
			r := results[id]
			if r.ErrorType != "transient" || !strings.Contains(r.Error, "HTTP 503") || !strings.Contains(r.Error, id) {
				t.Errorf("%s failed with [%s] %q; want a transient failure naming the dataset and HTTP 503", id, r.ErrorType, r.Error)
			}
		} else {
			others = append(others, id)
		}
	}
	if fred == 0 {
		t.Fatal("the registry has no FRED dataset")
	}
	// Every attempt reached the simulator and met the outage.
	attempts := int64(workflows.IngestActivityOptions.RetryPolicy.MaximumAttempts)
	if got := stats.Providers["fred"].Faults.Down; got != attempts*int64(fred) {
		t.Errorf("FRED answered %d requests with 503, want %d datasets × %d attempts", got, fred, attempts)
	}
	checkEveryProviderStored(t, results, providersOf(others))
	checkLimits(t, stats, nil, providersOf(others))
	c.checkLake(results, date, nil)
}

// halfRateDatasets is how many KIS datasets TestHalfRate ingests: enough
// for the backoff to bite and settle (the 100-dataset figure is
// BenchmarkKISBackoff3Workers in package worker).
const halfRateDatasets = 30

// TestHalfRate runs KIS datasets against a KIS that rejects calls above
// half its declared rate: the scope backs off (the limiter records the
// penalties, the ops events record each backoff), no call exceeds the
// declared limits, and every dataset completes.
func TestHalfRate(t *testing.T) {
	t.Parallel()
	c := newCluster(t, clusterOptions{workers: 1, faults: []simulator.Fault{{Provider: "kis", RejectAtFraction: 0.5}}})
	date := logicalDate()
	plan := planned("kis")[:halfRateDatasets]
	res := c.runBatch(workflows.DailyIngestInput{Date: date, Providers: []string{"kis"}, Datasets: plan})
	stats := c.sim.Stats()
	results := byDataset(t, res, date, plan)
	checkSucceeded(t, results, nil)
	checkEveryProviderStored(t, results, []string{"kis"})
	checkLimits(t, stats, map[string]bool{"kis": true}, []string{"kis"})

	const scope = "kis/key"
	rejected := stats.Scopes[scope].RejectedByFault
	if rejected == 0 {
		t.Fatalf("KIS rejected no call at half its rate: the fault did not bite (%+v)", stats.Scopes[scope])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := ratelimit.NewClient(c.tc, ratelimit.ClientOptions{TaskQueue: c.tq}).State(ctx, scope)
	if err != nil {
		t.Fatalf("querying the %s limiter: %v", scope, err)
	}
	if st.Ledger.Penalties != rejected {
		t.Errorf("the %s limiter counted %d penalties; KIS rejected %d calls", scope, st.Ledger.Penalties, rejected)
	}
	evs, err := events.List(ctx, c.tc)
	if err != nil {
		t.Fatalf("listing ops events: %v", err)
	}
	var backoffs int64
	for _, e := range evs {
		if e.Kind != events.KindBackoff {
			continue
		}
		if e.Scope != scope || e.Provider != "kis" || e.Dataset == "" || e.Attrs["declared"] == "" || !strings.Contains(e.Attrs["observed"], "EGW00201") {
			t.Errorf("backoff event %+v does not name the scope, dataset, declaration and the provider's answer", e)
		}
		backoffs++
	}
	if backoffs != rejected {
		t.Errorf("%d %s events recorded; KIS rejected %d calls", backoffs, events.KindBackoff, rejected)
	}
	t.Logf("KIS rejected %d calls at half rate; %d penalties, %d backoff events, factor now %.3g", rejected, st.Ledger.Penalties, backoffs, st.Factor)
	c.checkLake(results, date, nil)
}
