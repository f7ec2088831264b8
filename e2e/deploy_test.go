//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/codec"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/tokenkeeper"
	"github.com/sluicehq/sluice/worker"
	"github.com/sluicehq/sluice/workflows"
)

// previousRelease is the commit TestDeploy builds its first workers from:
// the last one landed before Sluice's workers polled as Worker Deployment
// versions, so the test's first cut-over is the one from unversioned
// workers to versioned ones that the first real deploy makes.
const previousRelease = "1f11e07"

// buildPrevious builds cmd/sluice of previousRelease (git archive into a
// temporary directory, go build there; the build cache makes the
// dependencies cheap) and returns the binary, kept in the user's cache
// directory under the commit, the Go version and the platform: a fixed
// commit builds the same binary every time. Without the commit (a shallow
// clone, a source tarball) it skips loudly, or fails when CI is set.
func buildPrevious(t *testing.T) string {
	t.Helper()
	var cached string
	if dir, err := os.UserCacheDir(); err == nil {
		cached = filepath.Join(dir, "sluice-e2e", fmt.Sprintf("sluice-%s-%s-%s-%s", previousRelease, runtime.Version(), runtime.GOOS, runtime.GOARCH))
		if fi, err := os.Stat(cached); err == nil && fi.Mode().IsRegular() {
			t.Logf("sluice of %s: %s (cached)", previousRelease, cached)
			return cached
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("running go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", previousRelease+"^{commit}").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("TestDeploy NEEDS THE GIT HISTORY: commit %s (the previous release) is not in %s: %v %s", previousRelease, root, err, out)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPED: " + msg)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", previousRelease)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	var aerr, terr bytes.Buffer
	archive.Stderr, untar.Stderr = &aerr, &terr
	if err := untar.Start(); err != nil {
		t.Fatalf("starting tar: %v", err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v %s", previousRelease, err, aerr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("unpacking %s: %v %s", previousRelease, err, terr.String())
	}
	bin := filepath.Join(dir, "sluice-"+previousRelease)
	build := exec.Command("go", "build", "-buildvcs=false", "-o", bin, "./cmd/sluice")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	began := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building sluice of %s: %v\n%s", previousRelease, err, out)
	}
	t.Logf("built sluice of %s in %s", previousRelease, time.Since(began).Round(time.Millisecond))
	if cached != "" {
		// Renamed into place whole, so a concurrent run never sees half.
		if err := os.MkdirAll(filepath.Dir(cached), 0o755); err == nil {
			tmp := cached + fmt.Sprintf(".%d", os.Getpid())
			if b, err := os.ReadFile(bin); err == nil && os.WriteFile(tmp, b, 0o755) == nil && os.Rename(tmp, cached) == nil {
				return cached
			}
			_ = os.Remove(tmp)
		}
	}
	return bin
}

// sluiceCmd runs the sluice binary with args against the cluster's
// namespace and task queue and returns its output.
func (c *cluster) sluiceCmd(args ...string) string {
	c.t.Helper()
	args = append(args, "--temporal", c.addr, "--namespace", c.ns, "--task-queue", c.tq)
	cmd := exec.Command(sluiceBin, args...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// currentBuild is the build id of the task queue's deployment's current
// version; "" while there is none.
func (c *cluster) currentBuild(ctx context.Context) string {
	d, err := c.tc.WorkerDeploymentClient().GetHandle(c.tq).Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil || d.Info.RoutingConfig.CurrentVersion == nil {
		return ""
	}
	return d.Info.RoutingConfig.CurrentVersion.BuildID
}

// openRuns lists the namespace's open runs, nil on an error (the next
// poll tries again).
func (c *cluster) openRuns(ctx context.Context) []worker.Run {
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	runs, err := worker.OpenRuns(qctx, c.tc)
	if err != nil {
		return nil
	}
	return runs
}

// singleton says whether a workflow type is one Sluice pins.
func singleton(typ string) bool {
	return typ == ratelimit.WorkflowName || typ == workflows.BackfillName || typ == workflows.WatchName || typ == workflows.NotifierName || typ == tokenkeeper.WorkflowName
}

// TestDeploy deploys Sluice twice in the middle of a backfill and a daily
// batch, against the simulator:
//
//  1. two workers of the previous release (previousRelease, unversioned)
//     start a backfill of five datasets and a daily batch of every other
//     dataset;
//  2. two workers of this build polling as build deploy-v1 start: the
//     first finds no current version and makes deploy-v1 current, so
//     every run moves to it at its next workflow task (the unversioned
//     to versioned cut-over: the new build replays the old build's
//     histories; see docs/deploy.md); the old workers are stopped;
//  3. two workers polling as deploy-v2 start (they leave the current
//     version alone), `sluice deploy promote --build-id deploy-v2` makes
//     it current and nudges the runs pinned to deploy-v1; once no open
//     run is pinned to deploy-v1 the deploy-v1 workers are stopped, the
//     backfill still running.
//
// It checks: the simulator counted 0 violations; both finish with every
// dataset and chunk ok or without data; every backfill chunk's object
// verifies and every daily object is the simulator's bytes; the lake
// holds those objects and nothing else (the deploy-v1 workers' stops
// left none of the writes they interrupted, and the temporary files the
// previous release's stops may leave are swept by this build's workers); the backfill's datasets were
// called as planned plus at most the retries of the ingests the two stops
// interrupted; every run pinned to deploy-v1 at the promote (limiters,
// the backfill parent, the KIS token keeper when it had a task there)
// continued as new onto deploy-v2 — a new run, pinned there — and only
// singletons were pinned; the KIS token endpoint was asked once over the
// three builds (the keeper's state crossed every continue-as-new); the
// daily batch ended on deploy-v2.
func TestDeploy(t *testing.T) {
	t.Parallel()
	prev := buildPrevious(t)
	// UPBIT bodies (about 80 KB a backfill chunk) stream at 8 KB/s and
	// data.go.kr's (about 30 KB) at 2 KB/s until the second cut-over is
	// done: the backfill and the daily batch outlast the cut-overs, and
	// ingests are in flight at every stop. Then they stream at full speed.
	//
	// KIS tokens are kept by the token keepers (sealed with a codec key),
	// so a keeper is among the singletons that move.
	keyFile := writeKeyFile(t)
	c := newCluster(t, clusterOptions{faults: []simulator.Fault{{Provider: "upbit", SlowBody: 8000}, {Provider: "datago", SlowBody: 2000}},
		workerArgs: []string{"--token-store", "keeper"}, workerEnv: []string{codec.EnvKeyFile + "=" + keyFile}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*batchTimeout)
	defer cancel()

	backfillDatasets := []string{"ecos-731y001-0000001", "fred-dgs2", "upbit-krw-btc", "fred-dgs10", "ecos-722y001-0101000"}
	var dailyDatasets []string
	for _, id := range planned() {
		if !slices.Contains(backfillDatasets, id) {
			dailyDatasets = append(dailyDatasets, id)
		}
	}
	date := logicalDate()

	old := []*workerProc{c.startWorkerBin(1, prev, nil), c.startWorkerBin(2, prev, nil)}
	c.waitPollers(2)
	// The new build's workers start before the work does and stay idle:
	// with no current version the server gives every task to the
	// unversioned workers, and --promote never keeps them from making
	// their build current as they start.
	v1env := []string{"SLUICE_BUILD_ID=deploy-v1", "SLUICE_PROMOTE=never"}
	v1 := []*workerProc{c.startWorkerBin(3, sluiceBin, v1env), c.startWorkerBin(4, sluiceBin, v1env)}
	b := c.startBackfill(ctx, "backfill-deploy", workflows.BackfillInput{From: "2016-01-01", To: "2025-12-31", Datasets: backfillDatasets})
	daily := c.start(workflows.DailyIngestInput{Date: date, Datasets: dailyDatasets})
	// Planned (their first workflow tasks done) on the previous release.
	waitFor(t, 3*time.Minute, "the backfill and the daily batch under way on the previous release", func() bool {
		return b.progress(ctx).Counts.Total > 0 && c.progress(daily).Total > 0
	})

	// Unversioned → deploy-v1.
	if cur := c.currentBuild(ctx); cur != "" {
		t.Fatalf("current version %q before any promote: --promote never did not hold", cur)
	}
	began := time.Now()
	t.Logf("sluice deploy promote:\n%s", c.sluiceCmd("deploy", "promote", "--build-id", "deploy-v1"))
	// progress answers zero when its query fails (a query timed out on a
	// loaded machine once, and read as "finished"): ask until both answer.
	var bp workflows.BackfillProgress
	var dp workflows.Progress
	answered := func() bool {
		bp, dp = b.progress(ctx), c.progress(daily)
		return bp.Counts.Total > 0 && dp.Total > 0
	}
	waitFor(t, time.Minute, "the progress queries after the promote", answered)
	if bp.State == workflows.BackfillDone || dp.Done >= dp.Total {
		t.Fatalf("finished before the first cut-over (backfill %+v, daily %+v): nothing to show", bp.Counts, dp)
	}
	// The previous release's workers may leave the temporary files of
	// the writes their stop interrupts (their Stop did not wait for the
	// aborts): this build's workers sweep them once stale.
	var oldTemps []string
	for _, w := range old {
		oldTemps = append(oldTemps, openTemps(w, filepath.Join(w.dataDir, "lake"))...)
		c.stop(w)
	}
	t.Logf("unversioned → deploy-v1: current after %s; old workers stopped at backfill %d/%d, daily %d/%d",
		time.Since(began).Round(time.Millisecond), bp.Counts.Done, bp.Counts.Total, dp.Done, dp.Total)
	waitFor(t, 3*time.Minute, "the backfill parent pinned to deploy-v1", func() bool {
		for _, r := range c.openRuns(ctx) {
			if r.Type == workflows.BackfillName && r.Pinned() && r.BuildID == "deploy-v1" {
				return true
			}
		}
		return false
	})

	// deploy-v1 → deploy-v2.
	v2env := []string{"SLUICE_BUILD_ID=deploy-v2"}
	// Started with the default --promote if-none: the deployment has a
	// current version, which they leave alone.
	c.startWorkerBin(5, sluiceBin, v2env)
	c.startWorkerBin(6, sluiceBin, v2env)
	pinnedV1 := map[string]string{} // workflow id → run id
	for _, r := range c.openRuns(ctx) {
		if r.Pinned() && r.BuildID == "deploy-v1" {
			pinnedV1[r.WorkflowID] = r.RunID
			if !singleton(r.Type) {
				t.Errorf("%s (%s) is pinned to deploy-v1: only the singletons should be", r.WorkflowID, r.Type)
			}
		}
	}
	waitFor(t, time.Minute, "the progress queries before the second promote", answered)
	if cur := c.currentBuild(ctx); cur != "deploy-v1" {
		t.Fatalf("current version %q after the deploy-v2 workers started, want deploy-v1: --promote if-none took over", cur)
	}
	began = time.Now()
	// Promote ends once no run is pinned to deploy-v1 (it fails if any
	// is after --drain-wait).
	t.Logf("sluice deploy promote:\n%s", c.sluiceCmd("deploy", "promote", "--build-id", "deploy-v2", "--drain-wait", "3m"))
	cutover := time.Since(began)
	after, err := worker.OpenRuns(ctx, c.tc)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range after {
		if r.Pinned() && r.BuildID == "deploy-v1" {
			t.Fatalf("%s (%s) still pinned to deploy-v1 after the promote", r.WorkflowID, r.Type)
		}
	}
	var bp2 workflows.BackfillProgress
	waitFor(t, time.Minute, "the backfill's progress query after the second promote", func() bool {
		bp2 = b.progress(ctx)
		return bp2.Counts.Total > 0
	})
	if bp2.State == workflows.BackfillDone {
		t.Fatalf("the backfill finished during the second cut-over (%+v): nothing to show", bp2.Counts)
	}
	var interrupted []string
	for _, w := range v1 {
		interrupted = append(interrupted, c.stop(w)...)
	}
	// The cut-overs are done: the rest of the run proves nothing more by
	// being slow.
	if err := c.sim.SetFaults(nil); err != nil {
		t.Fatal(err)
	}
	cleared := time.Now()
	t.Logf("deploy-v1 workers stopped while writing %d objects, none left behind", len(interrupted))
	t.Logf("deploy-v1 → deploy-v2: %d runs pinned to deploy-v1 at the promote (backfill %d/%d, daily %d/%d), none %s later; deploy-v1 workers stopped at backfill %d/%d",
		len(pinnedV1), bp.Counts.Done, bp.Counts.Total, dp.Done, dp.Total, cutover.Round(time.Millisecond), bp2.Counts.Done, bp2.Counts.Total)
	t.Logf("sluice deploy status:\n%s", c.sluiceCmd("deploy", "status"))

	// The singletons pinned to deploy-v1 continued as new onto deploy-v2.
	now, err := worker.OpenRuns(ctx, c.tc)
	if err != nil {
		t.Fatal(err)
	}
	moved := map[string]worker.Run{}
	for _, r := range now {
		moved[r.WorkflowID] = r
	}
	if _, ok := pinnedV1[b.id]; !ok {
		t.Errorf("the backfill parent was not pinned to deploy-v1 at the promote")
	}
	keepers := 0
	for id := range pinnedV1 {
		if strings.HasPrefix(id, tokenkeeper.WorkflowID("")) {
			keepers++
		}
	}
	limiters := 0
	for id, run := range pinnedV1 {
		r, open := moved[id]
		if !open {
			continue // finished meanwhile (the backfill, at its end)
		}
		if strings.HasPrefix(id, "limiter/") {
			limiters++
		}
		if r.RunID == run || !r.Pinned() || r.BuildID != "deploy-v2" {
			t.Errorf("%s: open run %s %s on %q, want a new run (not %s) pinned to deploy-v2", id, r.RunID, r.Behavior, r.BuildID, run)
		}
	}
	if limiters == 0 {
		t.Error("no limiter was pinned to deploy-v1: the cut-over moved none")
	}

	res := c.wait(daily)
	var bres workflows.BackfillProgress
	if err := b.run.Get(ctx, &bres); err != nil {
		t.Fatalf("backfill: %v", err)
	}
	t.Logf("the backfill and the daily batch finished %s after the second cut-over", time.Since(cleared).Round(time.Millisecond))
	desc, err := c.tc.DescribeWorkflowExecution(ctx, daily.GetID(), daily.GetRunID())
	if err != nil {
		t.Fatal(err)
	}
	if got := desc.GetWorkflowExecutionInfo().GetVersioningInfo().GetDeploymentVersion().GetBuildId(); got != "deploy-v2" {
		t.Errorf("the daily batch ended on build %q, want deploy-v2 (auto-upgrade)", got)
	}

	stats := c.sim.Stats()
	violations := 0
	var tokenRequests, tokensIssued, tokensRefused int64
	for _, s := range stats.Scopes {
		violations += int(s.Violations)
		tokenRequests += s.TokenRequests
		tokensIssued += s.TokensIssued
		tokensRefused += s.TokenRejected
	}
	// One KIS token across three builds: the keeper's state crossed
	// every continue-as-new.
	if tokenRequests != 1 || tokensIssued != 1 || tokensRefused != 0 {
		t.Errorf("the token endpoint was asked %d times, issued %d, refused %d; want 1, 1, 0", tokenRequests, tokensIssued, tokensRefused)
	}
	checkLimits(t, stats, nil, nil)
	b.checkDone(bres)
	b.checkLake(ctx)
	var made int64
	for _, id := range backfillDatasets {
		made += c.requests.count(id)
	}
	// Each stop may interrupt the ingests in flight: a window of four a
	// dataset, two pages each at most, retried on the new workers.
	retries := int64(2 * 4 * 2 * len(backfillDatasets))
	if planned := int64(b.plan.Totals.Calls); made < planned || made > planned+retries {
		t.Errorf("backfill calls made = %d, want the %d planned plus at most %d retries", made, planned, retries)
	}
	results := byDataset(t, res, date, dailyDatasets)
	checkSucceeded(t, results, nil)

	// The lake: the daily batch's objects and the backfill's, nothing else
	// — the previous release's leftovers swept.
	waitFor(t, 3*time.Minute, "this build's workers to sweep the temporary files the previous release's stop left", func() bool {
		for _, p := range oldTemps {
			if _, err := os.Stat(p); err == nil {
				return false
			}
		}
		return true
	})
	var chunks int
	c.otherKeys, chunks = b.lakeKeys(ctx)
	c.checkLake(results, date, nil)
	t.Logf("deploy: %d violations; backfill %d chunks (%d objects, all verified), %d calls made for %d planned, parent runs %d; daily %d datasets (%d ok, %d no data, %d failed); %d limiters and %d token keepers moved to deploy-v2 by continue-as-new; %d KIS token requests",
		violations, bres.Counts.Total, chunks, made, b.plan.Totals.Calls, bres.Runs, len(res.Results), res.Succeeded, res.NoData, res.Failed, limiters, keepers, tokenRequests)
}
