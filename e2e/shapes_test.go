//go:build linux

package e2e

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/workflows"
)

// shapeCase is one answer shape of the recorded corpus, served as a
// simulator fault during TestAnswerShapes's batch.
type shapeCase struct {
	// fault is the --fault spec.
	fault string
	// provider is the fault's provider; dataset the dataset it shapes
	// ("" for a provider-wide fault).
	provider, dataset string
	// failClass, when set, is the class the dataset must fail with; else
	// it must land after the shape's answers, which the worker's call
	// metrics must record as seenClass on scope (at least times of them).
	failClass string
	scope     string
	seenClass string
	times     int64
}

// answerShapes are the shapes, each on a dataset of its own (KIS's token
// shape on the whole provider).
var answerShapes = []shapeCase{
	// data.go.kr's daily quota spent, in the gateway's JSON form on HTTP
	// 429: the dataset fails quota_exhausted at once (the worker's
	// --max-quota-wait is 0) and nothing calls the spent service again.
	{fault: "provider=datago,dataset=visitkorea-tourism,shape=gateway-json,code=22,status=429",
		provider: "datago", dataset: "visitkorea-tourism", failClass: "quota_exhausted"},
	// The flat JSON error in HTTP 200, without the response wrapper.
	{fault: "provider=datago,dataset=fsc-bond-market-index,shape=flat-json,code=10",
		provider: "datago", dataset: "fsc-bond-market-index", failClass: "bad_request"},
	// Code 30 in a burst (two answers, XML on HTTP 401): ambiguous, so
	// unconfirmed (transient) until three in a row; the dataset lands.
	{fault: "provider=datago,dataset=fsc-derivative-market-index,shape=gateway-xml,code=30,status=401,times=2",
		provider: "datago", dataset: "fsc-derivative-market-index", scope: "datago/service/15094807", seenClass: "transient", times: 2},
	// UPBIT's plain-text 429.
	{fault: "provider=upbit,dataset=upbit-krw-eth,shape=429-text,times=2",
		provider: "upbit", dataset: "upbit-krw-eth", scope: "upbit/ip", seenClass: "rate_limited", times: 2},
	// KIS rt_cd "2" (OPSQ2001, an input field refused) in HTTP 200.
	{fault: "provider=kis,dataset=kis-fx-jpykrw,shape=rt-cd,code=2",
		provider: "kis", dataset: "kis-fx-jpykrw", failClass: "bad_request"},
	// An empty body in HTTP 200.
	{fault: "provider=kis,dataset=kis-fx-eurusd,shape=empty-body,times=2",
		provider: "kis", dataset: "kis-fx-eurusd", scope: "kis/key", seenClass: "transient", times: 2},
	// The token endpoint hands out an already-expired token once: every
	// KIS dataset still lands, with no token request refused.
	{fault: "provider=kis,shape=token-expired,times=1", provider: "kis"},
	// FRED's intermittent "api_key is not registered" for a valid key,
	// twice: unconfirmed, then the dataset lands.
	{fault: "provider=fred,dataset=fred-dgs5,shape=key-not-registered,times=2",
		provider: "fred", dataset: "fred-dgs5", scope: "fred/key", seenClass: "transient", times: 2},
	// A portal's HTML maintenance page in HTTP 200, twice.
	{fault: "provider=ecos,dataset=ecos-731y001-0000002,shape=html-maintenance,times=2",
		provider: "ecos", dataset: "ecos-731y001-0000002", scope: "ecos/key", seenClass: "transient", times: 2},
}

// shapeControls are datasets under no fault, one or more per provider.
var shapeControls = []string{"fsc-stock-market-index", "upbit-krw-btc", "kis-fx-usdkrw", "fred-dgs10", "ecos-731y001-0000001"}

// TestAnswerShapes runs one daily batch of a few datasets of every
// provider with each answer shape of the recorded corpus on for one of
// them (issue 22 §3): nothing is lost (every dataset under no fault, and
// every dataset whose shape passes, lands and verifies against the
// simulator's bytes), the datasets whose shape is final fail with the
// right class in the batch result, the passing shapes were classified as
// expected (the workers' call metrics by outcome, UPBIT's backoff events),
// no call went to a spent quota, and no limit was exceeded.
func TestAnswerShapes(t *testing.T) {
	t.Parallel()
	env(t)
	began := time.Now()
	var faults []simulator.Fault
	plan := append([]string(nil), shapeControls...)
	for _, c := range answerShapes {
		f, err := simulator.ParseFault(c.fault)
		if err != nil {
			t.Fatal(err)
		}
		faults = append(faults, f)
		if c.dataset != "" {
			plan = append(plan, c.dataset)
		}
	}
	for _, id := range plan {
		if reg.Dataset(id) == nil {
			t.Fatalf("dataset %s is not in the default registry", id)
		}
	}
	c := newCluster(t, clusterOptions{workers: 1, faults: faults, metrics: true})
	date := logicalDate()
	res := c.runBatch(workflows.DailyIngestInput{Date: date, Datasets: plan})
	stats := c.sim.Stats()
	results := byDataset(t, res, date, plan)

	failing := map[string]string{}
	for _, sc := range answerShapes {
		if sc.failClass != "" {
			failing[sc.dataset] = sc.failClass
		}
	}
	checkSucceeded(t, results, func(id string) bool { return failing[id] != "" })
	for id, class := range failing {
		if r := results[id]; r.Status != workflows.StatusFailed || r.ErrorType != class {
			t.Errorf("%s: %s [%s] %q; want failed with class %s", id, r.Status, r.ErrorType, r.Error, class)
		}
	}
	checkEveryProviderStored(t, results, providersOf(plan))

	// Every fault answered at least once (as often as its times allow).
	shaped := map[string]int64{}
	for _, sc := range answerShapes {
		shaped[sc.provider] += max(sc.times, 1)
	}
	for p, n := range shaped {
		if got := stats.Providers[p].Faults.Shaped; got < n {
			t.Errorf("provider %s: %d shaped answers, want at least %d: a fault never bit", p, got, n)
		}
	}

	// No call against a spent quota, and the quota the shape spent is
	// spent.
	for _, id := range sortedKeys(stats.Scopes) {
		if n := stats.Scopes[id].CallsAgainstSpentQuota; n != 0 {
			t.Errorf("scope %s: %d calls against a spent quota", id, n)
		}
	}
	if st := stats.Scopes["datago/service/15073861"]; st == nil || !st.QuotaSpent {
		t.Errorf("visitkorea's service quota is not spent: %+v", st)
	}
	// The token shape bit and the keeper fetched a good token after it,
	// no request refused (checkLimits counts token rejections too).
	if st := stats.Scopes["kis/key"]; st.TokensIssued < 2 {
		t.Errorf("kis/key issued %d tokens; want the expired one and a good one", st.TokensIssued)
	}
	checkLimits(t, stats, map[string]bool{"datago": true}, providersOf(plan))

	// The passing shapes were classified as expected.
	outcomes := c.scrapeOutcomes(c.workers[0])
	for _, sc := range answerShapes {
		if sc.seenClass == "" {
			continue
		}
		if got := outcomes[sc.scope][sc.seenClass]; got < sc.times {
			t.Errorf("%s: scope %s recorded %d %s calls, want at least %d (outcomes %v)", sc.fault, sc.scope, got, sc.seenClass, sc.times, outcomes[sc.scope])
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, err := events.List(ctx, c.tc)
	if err != nil {
		t.Fatalf("listing ops events: %v", err)
	}
	upbitBackoffs := 0
	for _, e := range evs {
		if e.Kind == events.KindBackoff && e.Provider == "upbit" {
			upbitBackoffs++
			if !strings.Contains(e.Attrs["observed"], "rate_limited") || !strings.Contains(e.Attrs["observed"], "HTTP 429") {
				t.Errorf("UPBIT backoff event observed %q; want rate_limited at HTTP 429", e.Attrs["observed"])
			}
		}
	}
	if upbitBackoffs == 0 {
		t.Error("no ratelimit.backoff event for UPBIT's plain-text 429")
	}
	c.checkLake(results, date, nil)
	t.Logf("%d datasets, %d shapes in %s", len(plan), len(answerShapes), time.Since(began).Round(time.Millisecond))
}

var outcomeLabelRe = regexp.MustCompile(`outcome="([^"]*)"`)

// scrapeOutcomes reads a worker's /metrics: the provider calls it sent,
// by scope instance and outcome (the call's class, or ok).
func (c *cluster) scrapeOutcomes(w *workerProc) map[string]map[string]int64 {
	c.t.Helper()
	out := map[string]map[string]int64{}
	for _, line := range c.scrapeMetrics(w) {
		s := callsRe.FindStringSubmatch(line)
		if s == nil {
			continue
		}
		scope, outcome := scopeLabelRe.FindStringSubmatch(s[1]), outcomeLabelRe.FindStringSubmatch(s[1])
		v, err := strconv.ParseFloat(s[2], 64)
		if scope == nil || outcome == nil || err != nil {
			c.t.Fatalf("%s: unreadable sample %q", w.name, line)
		}
		if out[scope[1]] == nil {
			out[scope[1]] = map[string]int64{}
		}
		out[scope[1]][outcome[1]] += int64(v)
	}
	return out
}

// scrapeMetrics reads a worker's /metrics (at the address its log names)
// and returns its lines.
func (c *cluster) scrapeMetrics(w *workerProc) []string {
	c.t.Helper()
	b, err := os.ReadFile(w.log)
	if err != nil {
		c.t.Fatal(err)
	}
	m := metricsAddrRe.FindSubmatch(b)
	if m == nil {
		c.t.Fatalf("%s logged no metrics address", w.name)
	}
	resp, err := http.Get("http://" + string(m[1]) + "/metrics")
	if err != nil {
		c.t.Fatalf("scraping %s: %v", w.name, err)
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		c.t.Fatalf("scraping %s: %v", w.name, err)
	}
	return lines
}

// TestSpentQuotaClosesTheService: data.go.kr answers its first call of
// service 15094807 with code 22 (the gateway's JSON on HTTP 429), which
// spends the service's daily quota for all three of its datasets. The
// worker's gate remembers the provider's word: the service's two other
// datasets fail quota_exhausted with Sluice's own code before any call,
// so no call meets the spent quota. (Before, each of them called once more
// and heard code 22 again: 2 calls against a spent quota.)
func TestSpentQuotaClosesTheService(t *testing.T) {
	t.Parallel()
	env(t)
	f, err := simulator.ParseFault("provider=datago,shape=gateway-json,code=22,status=429,times=1")
	if err != nil {
		t.Fatal(err)
	}
	plan := []string{"fsc-stock-market-index", "fsc-bond-market-index", "fsc-derivative-market-index"}
	c := newCluster(t, clusterOptions{workers: 1, faults: []simulator.Fault{f}})
	date := logicalDate()
	res := c.runBatch(workflows.DailyIngestInput{Date: date, Datasets: plan})
	stats := c.sim.Stats()
	results := byDataset(t, res, date, plan)
	provider, own := 0, 0
	for _, id := range plan {
		r := results[id]
		if r.Status != workflows.StatusFailed || r.ErrorType != "quota_exhausted" {
			t.Errorf("%s: %s [%s] %q; want failed quota_exhausted", id, r.Status, r.ErrorType, r.Error)
			continue
		}
		switch {
		case strings.Contains(r.Error, "sluice-quota") && strings.Contains(r.Error, "code 22"):
			own++
		case strings.Contains(r.Error, "(22)"):
			provider++
		default:
			t.Errorf("%s: error %q names neither the provider's code 22 nor Sluice's refusal", id, r.Error)
		}
	}
	if provider != 1 || own != 2 {
		t.Errorf("%d datasets heard the provider's code 22 and %d were refused by the gate; want 1 and 2", provider, own)
	}
	st := stats.Scopes["datago/service/15094807"]
	if st == nil || !st.QuotaSpent {
		t.Fatalf("service 15094807's quota is not spent: %+v", st)
	}
	if st.CallsAgainstSpentQuota != 0 {
		t.Errorf("%d calls against the spent quota, want 0", st.CallsAgainstSpentQuota)
	}
}
