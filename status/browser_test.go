package status

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/schedules"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
	"github.com/sluicehq/sluice/worker"
)

// chromium finds Debian's chromium (the Makefile installs it). Without
// one the browser test skips loudly on a developer's machine and fails on
// CI (CI set, as .ci/run does).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SLUICE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "BROWSER TESTS NOT RUN: no chromium found (make test installs Debian's chromium when run as root: apt-get install -y chromium fonts-nanum; or set SLUICE_CHROMIUM)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// artifactDir is where the browser test writes its screenshots:
// $SLUICE_ARTIFACTS/status, else var/test-artifacts/status at the module
// root (gitignored).
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SLUICE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "var", "test-artifacts")
	}
	dir = filepath.Join(dir, "status")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// realRun is a short real run: the embedded Temporal server, the
// simulator, a worker, the local lake and the watch store.
type realRun struct {
	reg   *registry.Registry
	sim   *simulator.Simulator
	tc    client.Client
	w     *worker.Worker
	lake  *sink.Local
	store store.Store
}

func startRealRun(t *testing.T, ctx context.Context) *realRun {
	t.Helper()
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := embedded.Start(ctx, embedded.Options{DataDir: filepath.Join(dir, "temporal"), FrontendAddr: "127.0.0.1:0", UIAddr: embedded.UIOff, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	rr := &realRun{}
	if rr.reg, err = registry.Default(registry.Options{}); err != nil {
		t.Fatal(err)
	}
	if rr.sim, err = simulator.New(simulator.Options{Registry: rr.reg, RateScale: 10, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(rr.sim.Handler())
	t.Cleanup(hs.Close)
	if rr.lake, err = sink.NewLocal(filepath.Join(dir, "lake")); err != nil {
		t.Fatal(err)
	}
	if rr.tc, err = client.Dial(client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace(), Logger: tlog.NewStructuredLogger(log)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rr.tc.Close)
	tokens, err := tokenstore.NewFile(filepath.Join(dir, "tokens"))
	if err != nil {
		t.Fatal(err)
	}
	if rr.store, err = store.Open(ctx, store.Config{DataDir: dir}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rr.store.Close() })
	// A generous send tolerance: this test process is race-built, and its
	// permit round trips are slower than the default 50 ms.
	rr.w, err = worker.Start(worker.Options{Client: rr.tc, Tolerance: time.Second, Config: activities.Config{Registry: rr.reg, Sink: rr.lake, Logger: log, RateScale: 10,
		BaseURLs: map[string]string{"*": hs.URL}, Credentials: connector.MapCredentials(simulator.TestCredentials(rr.reg)), TokenStore: tokens,
		Watch: rr.store}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rr.w.Stop)
	return rr
}

// probeResult is what one probe did to its dataset: its state after it
// and the Changes it recorded.
type probeResult struct {
	State   watch.DatasetState
	Changes []watch.Change
}

// probe runs the real Probe activity (through the scope limiters), which
// records the probe in the watch store as the watch workflow's probes do,
// and reads back the dataset's state and the Changes the probe recorded.
func (rr *realRun) probe(t *testing.T, ctx context.Context, dataset string) probeResult {
	t.Helper()
	res, err := rr.w.Activities().Probe(ctx, activities.ProbeInput{Dataset: dataset})
	if err != nil {
		t.Fatalf("probing %s: %v", dataset, err)
	}
	states, err := rr.store.States(ctx, time.Now(), dataset)
	if err != nil || len(states) != 1 {
		t.Fatalf("state of %s after a probe: %v, %v", dataset, states, err)
	}
	changes, err := rr.store.Changes(ctx, store.ChangeFilter{Datasets: []string{dataset}, Since: res.At})
	if err != nil {
		t.Fatal(err)
	}
	return probeResult{State: states[0], Changes: changes}
}

// TestBrowser drives headless Chromium against a status server over a
// store and lake filled by a short real run: every provider on the public
// page; a dataset the simulator takes down shown down with its Change; a
// dataset page's attribution equal to the registry's; the operator page
// refusing without the token and listing 확인 필요 with it; the coverage
// map marking a deliberately missing year. Screenshots of each page go to
// the artifact folder.
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	rr := startRealRun(t, ctx)

	// One probe of a dataset of every provider, then FRED's 10-year
	// yield taken down by fault injection until the outage is confirmed.
	down := "fred-dgs10"
	up := map[string]string{}
	for _, p := range rr.reg.Providers {
		if ds := rr.reg.DatasetsOf(p.ID); len(ds) > 0 {
			up[p.ID] = ds[0].ID
			if r := rr.probe(t, ctx, ds[0].ID); r.State.State != watch.Up {
				t.Fatalf("%s after an answering probe: %s (%s)", ds[0].ID, r.State.State, r.State.Reason)
			}
		}
	}
	if r := rr.probe(t, ctx, down); r.State.State != watch.Up {
		t.Fatalf("%s: %s", down, r.State.State)
	}
	if err := rr.sim.SetFaults([]simulator.Fault{{Provider: "fred", Dataset: down, Down: true}}); err != nil {
		t.Fatal(err)
	}
	cfg, _ := watch.ConfigFor(rr.reg, rr.reg.Dataset(down))
	var last probeResult
	for i := 0; i < cfg.Policy.FailuresToConfirm; i++ {
		last = rr.probe(t, ctx, down)
	}
	if last.State.State != watch.Down || len(last.Changes) != 1 {
		t.Fatalf("%s after %d failed probes: %s, changes %v", down, cfg.Policy.FailuresToConfirm, last.State.State, last.Changes)
	}
	if err := rr.sim.SetFaults(nil); err != nil {
		t.Fatal(err)
	}

	// Ten years of one FRED series through the real Ingest activity, one
	// range a year, but for a deliberately missing year.
	cov := "fred-dgs2"
	if rr.reg.Dataset(cov) == nil {
		cov = rr.reg.DatasetsOf("fred")[1].ID
	}
	thisYear := time.Now().UTC().Year()
	missing := thisYear - 5
	for y := thisYear - 9; y < thisYear; y++ {
		if y == missing {
			continue
		}
		if _, err := rr.w.Activities().Ingest(ctx, activities.IngestInput{Dataset: cov, From: fmt.Sprintf("%d-01-01", y), To: fmt.Sprintf("%d-12-31", y)}); err != nil {
			t.Fatalf("ingesting %s %d: %v", cov, y, err)
		}
	}

	startFakeBackfillAndSchedule(t, ctx, rr.tc)

	srv, err := New(Config{Registry: rr.reg, Store: rr.store, Lake: rr.lake, LakeDescription: "local lake (test)",
		Limiter: rr.w.Limiter(), Schedules: Temporal{Client: rr.tc, Namespace: "default"}, Backfills: Temporal{Client: rr.tc, Namespace: "default"},
		OperatorToken: testToken, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.ServeListener(sctx, ln, nil) }()
	t.Cleanup(func() { stop(); <-done })
	if err := srv.RefreshLake(ctx); err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()

	actx, acancel := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	shots := artifactDir(t)
	shot := func(name string, sel string) {
		t.Helper()
		var png []byte
		var err error
		if sel == "" {
			png, err = chromedp.Run(bctx, chromedp.CaptureScreenshot())
		} else {
			if err := chromedp.Do(bctx, chromedp.ScrollIntoView(chromedp.CSS(sel))); err != nil {
				t.Fatalf("scrolling to %s: %v", sel, err)
			}
			png, err = chromedp.Run(bctx, chromedp.CaptureScreenshot())
		}
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("evaluating %s: %v", js, err)
		}
		return v
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// The public page: every provider, the down dataset shown down.
	do("opening the public page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("section.provider")))
	headings := eval(`Array.from(document.querySelectorAll("section.provider h2")).map(h => h.innerText).join("\n")`)
	for _, p := range rr.reg.Providers {
		if len(rr.reg.DatasetsOf(p.ID)) > 0 && !strings.Contains(headings, p.Name) {
			t.Errorf("provider %s (%s) is not a section of the public page:\n%s", p.ID, p.Name, headings)
		}
	}
	if s := eval(`document.querySelector("#ds-` + down + ` .state").innerText`); !strings.HasPrefix(s, "down") {
		t.Errorf("%s shows %q, want down", down, s)
	}
	if s := eval(`document.querySelector("#ds-` + up["ecos"] + ` .state").innerText`); !strings.HasPrefix(s, "up") {
		t.Errorf("%s shows %q, want up", up["ecos"], s)
	}
	if n := eval(`String(document.querySelectorAll("#ds-` + down + ` .bar li").length)`); n != strconv.Itoa(barDays) {
		t.Errorf("the bar has %s cells", n)
	}
	shot("summary", "")
	do("scrolling to FRED", chromedp.ScrollIntoView(chromedp.CSS("#p-fred")))
	shot("summary-fred", "#p-fred")

	// The down dataset's page: its Change.
	do("opening "+down, chromedp.Navigate(base+"/datasets/"+down), chromedp.WaitVisible(chromedp.CSS("#changes")))
	if s := eval(`Array.from(document.querySelectorAll("tr.change-state")).map(r => r.innerText).join("\n")`); !strings.Contains(s, "up → down") {
		t.Errorf("%s's Changes do not show up → down:\n%s", down, s)
	}
	if s := eval(`document.querySelector(".notice-fred").innerText`); !strings.Contains(s, rr.reg.Provider("fred").Notice.Text) {
		t.Errorf("FRED notice: %q", s)
	}
	shot("dataset-down", "")

	// A Korean attribution, exactly the registry's.
	ko := up["ecos"]
	do("opening "+ko, chromedp.Navigate(base+"/datasets/"+ko), chromedp.WaitVisible(chromedp.CSS("#attribution")))
	if got, want := eval(`document.querySelector("#attribution").innerText`), rr.reg.Dataset(ko).Terms.Attribution; got != want {
		t.Errorf("attribution on the page %q, registry %q", got, want)
	}
	if lang := eval(`document.querySelector("#attribution").lang`); lang != "ko" {
		t.Errorf("attribution lang %q", lang)
	}
	do("scrolling to the terms", chromedp.ScrollIntoView(chromedp.CSS("#terms")))
	shot("dataset-terms", "#terms")

	// The operator page: refused without the token, the login form, then
	// 확인 필요 and the coverage map.
	do("opening /ops without a token", chromedp.Navigate(base+"/ops"), chromedp.WaitVisible(chromedp.CSS("form.login")))
	if loc := eval(`location.pathname`); loc != "/ops/login" {
		t.Errorf("/ops without a token ended at %s", loc)
	}
	if strings.Contains(eval(`document.body.innerText`), "확인 필요") {
		t.Error("the login page shows the operator page")
	}
	do("a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token-at-all"), chromedp.Click(chromedp.CSS("form.login button")),
		chromedp.WaitVisible(chromedp.CSS("p.warn")))
	if loc := eval(`location.pathname`); loc != "/ops/login" {
		t.Errorf("a wrong token ended at %s", loc)
	}
	shot("login", "")
	do("logging in", chromedp.SendKeys(chromedp.CSS("#token"), testToken), chromedp.Click(chromedp.CSS("form.login button")),
		chromedp.WaitVisible(chromedp.CSS("#check")))
	if loc := eval(`location.href`); strings.Contains(loc, testToken) || !strings.HasSuffix(loc, "/ops") {
		t.Errorf("after login: %s", loc)
	}
	if n := eval(`String(document.querySelectorAll("table.findings tbody tr").length)`); n != strconv.Itoa(len(rr.reg.Findings)) {
		t.Errorf("확인 필요 lists %s items, the registry has %d", n, len(rr.reg.Findings))
	}
	if cookie := eval(`document.cookie`); strings.Contains(cookie, sessionCookie) {
		t.Error("the session cookie is readable by script (not HttpOnly)")
	}
	shot("ops", "")
	if s := eval(`document.querySelector("#scope-fred\\/key .limiter").innerText`); s != "running" {
		t.Errorf("fred/key limiter: %q", s)
	}
	// The schedule and the running backfill (listings are eventually
	// consistent: reload until they show).
	for i := 0; ; i++ {
		sc := eval(`(document.querySelector("table.schedules") || {innerText: ""}).innerText`)
		bf := eval(`(document.querySelector("table.backfills") || {innerText: ""}).innerText`)
		if strings.Contains(sc, "sluice-test-daily") && strings.Contains(bf, "backfill-test") && strings.Contains(bf, "25.0%") {
			if !strings.Contains(sc, "0 14 * * 1-5") {
				t.Errorf("schedule row: %q", sc)
			}
			break
		}
		if i == 60 {
			t.Fatalf("the schedule or the backfill never showed:\n%s\n%s", sc, bf)
		}
		do("reloading /ops", chromedp.Sleep(500*time.Millisecond), chromedp.Navigate(base+"/ops"), chromedp.WaitVisible(chromedp.CSS("#check")))
	}
	do("scrolling to the schedules", chromedp.ScrollIntoView(chromedp.CSS("#schedules")))
	shot("ops-schedules", "#schedules")
	do("scrolling to the budgets", chromedp.ScrollIntoView(chromedp.CSS("#budget")))
	shot("ops-budget", "#budget")
	cells := eval(`Array.from(document.querySelectorAll("#cov-` + cov + ` td.cov")).map(td => td.className + "|" + td.title).join("\n")`)
	for _, line := range strings.Split(cells, "\n") {
		class, title, _ := strings.Cut(line, "|")
		year, _, _ := strings.Cut(title, ":")
		y, _ := strconv.Atoi(year)
		switch {
		case y == missing && !strings.Contains(class, "cov-missing"):
			t.Errorf("the deliberately missing year %d is %q", y, class)
		case y > thisYear-10 && y < thisYear && y != missing && !strings.Contains(class, "cov-complete"):
			t.Errorf("year %d of %s is %q, want complete", y, cov, class)
		}
	}
	if s := eval(`document.querySelector("#cov-` + cov + `").innerText`); !strings.Contains(s, fmt.Sprintf("sluice backfill start --from %d-01-0", missing)) {
		t.Errorf("no fill command for %d:\n%s", missing, s)
	}
	do("scrolling to the coverage map", chromedp.ScrollIntoView(chromedp.CSS("#cov-"+cov)))
	shot("ops-coverage", "#cov-"+cov)
	do("opening the month view", chromedp.Navigate(base+"/ops/coverage/"+cov), chromedp.WaitVisible(chromedp.CSS("table.coverage")))
	shot("ops-coverage-months", "")
	t.Logf("screenshots in %s", shots)
}

// fakeBackfill stands for the Backfill workflow (built in parallel): a
// running workflow of that type answering a progress query.
func fakeBackfill(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, BackfillProgressQuery, func() (map[string]any, error) {
		return map[string]any{"from": "2016-01-01", "to": "2025-12-31", "state": "running", "percent": 25.0,
			"counts": map[string]any{"chunks": 40, "done": 10, "failed": 1}, "providers": []map[string]any{{"provider": "fred", "state": "running"}}}, nil
	}); err != nil {
		return err
	}
	workflow.GetSignalChannel(ctx, "stop").Receive(ctx, nil)
	return nil
}

// startFakeBackfillAndSchedule runs a workflow of type Backfill on a
// test queue and creates a paused schedule carrying Sluice's memo.
func startFakeBackfillAndSchedule(t *testing.T, ctx context.Context, tc client.Client) {
	t.Helper()
	w := sdkworker.New(tc, "status-test", sdkworker.Options{})
	w.RegisterWorkflowWithOptions(fakeBackfill, workflow.RegisterOptions{Name: BackfillWorkflowType})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "backfill-test", TaskQueue: "status-test"}, BackfillWorkflowType)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tc.TerminateWorkflow(context.Background(), run.GetID(), "", "test over") })
	_, err = tc.ScheduleClient().Create(ctx, client.ScheduleOptions{ID: "sluice-test-daily", Paused: true, Note: "test",
		Spec:   client.ScheduleSpec{CronExpressions: []string{"0 14 * * 1-5"}, TimeZoneName: "Asia/Seoul"},
		Action: &client.ScheduleWorkflowAction{ID: "daily", Workflow: "DailyIngest", TaskQueue: "sluice"},
		Memo:   map[string]any{schedules.MemoOwner: schedules.OwnerName}})
	if err != nil {
		t.Fatal(err)
	}
}
