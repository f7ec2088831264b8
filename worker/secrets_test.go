package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/kis"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/lineage"
	"github.com/sluicehq/sluice/lineage/lineagetest"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/worker"
	"github.com/sluicehq/sluice/workflows"
)

// canaries are the credentials of the canary test: shaped as the
// simulator expects (a FRED key is 32 lower-case letters and digits, an
// ECOS key 20 upper-case ones) and holding the characters that encodings
// change (+ / =).
var canaries = map[string]string{
	"KIS_APP_KEY":        "PScanaryKISappKEY0123456789abcdefghi",
	"KIS_APP_SECRET":     "canaryKISappSECRET+/0123456789abcd==",
	"ECOS_API_KEY":       "CANARYECOSKEY0123456",
	"FRED_API_KEY":       "canaryfredkey0123456789abcdefghi",
	"UPBIT_ACCESS_KEY":   "canaryUPBITaccessKEY0123456789abcdefghij",
	"UPBIT_SECRET_KEY":   "canaryUPBITsecretKEY0123456789abcdefghij",
	"DATAGO_SERVICE_KEY": "canary+DATAGO/serviceKEY0123456789abcdefghijklmnopqrstuvwxyz+/ABCDEFGHIJKLMNOPQRSTUV==",
}

// hostile sits in front of the simulator and answers the first call of
// each dataset the way a provider (or anything impersonating one) might
// leak a request's secrets back:
//
//   - FRED: the request line as its status line, so that the transport's
//     error quotes the URL with the key (the error Temporal's converter
//     used to follow to the original);
//   - data.go.kr: a 502 echoing the service key with lower-case escapes,
//     JSON-escaped slashes and a doubly encoded '=';
//   - KIS quotations: a 502 echoing the request's headers — the bearer
//     token (cut off by the snippet), appkey, and appsecret with its '+'
//     decoded as a space;
//   - ECOS base rate: a 302 to another host, the key in its query.
//
// Later calls go to the simulator, so every retried dataset succeeds and
// leaves an object whose metadata is checked too.
type hostile struct {
	sim   http.Handler
	other string // the host ECOS redirects to
	mu    sync.Mutex
	hits  map[string]int
}

func (h *hostile) first(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hits == nil {
		h.hits = map[string]int{}
	}
	h.hits[key]++
	return h.hits[key] == 1
}

func (h *hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/fred/series/observations" && h.first("fred"):
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			fmt.Fprintf(conn, "%s %s %s\r\n\r\n", r.Method, r.RequestURI, r.Proto)
			conn.Close()
		}
	case strings.HasPrefix(p, "/1160100/") && h.first("datago"):
		key := r.URL.Query().Get("serviceKey")
		enc := strings.NewReplacer("+", "%2b", "/", `\/`, "=", "%253d").Replace(key)
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, `{"error":"upstream refused serviceKey=%s"}`, enc)
	case strings.HasPrefix(p, "/uapi/") && h.first("kis"):
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, `{"msg1":"echo appkey: %s appsecret: %s authorization: %s"}`, r.Header.Get("appkey"),
			strings.ReplaceAll(r.Header.Get("appsecret"), "+", " "), r.Header.Get("authorization"))
	case strings.Contains(p, "/722Y001/"):
		http.Redirect(w, r, h.other+"/collect?key="+url.QueryEscape(strings.Split(p, "/")[3]), http.StatusFound)
	default:
		h.sim.ServeHTTP(w, r)
	}
}

// TestNoSecretLeavesByAnyPath runs a daily ingest through the embedded
// Temporal server, real workers (activities, connectors, limiter, metrics,
// local lake) and the simulator behind a provider that echoes secrets back
// and redirects elsewhere, then reads every workflow's whole history (every
// event, every failure and its causes, in their wire form), the worker's,
// the SDK's and the server's logs, a /metrics scrape and every stored
// object and its metadata: no canary credential and no issued token is in
// any of them, in any spelling. The other host the provider redirected to
// received nothing.
func TestNoSecretLeavesByAnyPath(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	logs := &connectortest.Log{}
	lg := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	srv, err := embedded.Start(ctx, embedded.Options{DataDir: t.TempDir(), FrontendAddr: "127.0.0.1:0", UIAddr: embedded.UIOff, Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })

	reg := connectortest.Registry(t)
	sim, err := simulator.New(simulator.Options{Registry: reg, Credentials: canaries})
	if err != nil {
		t.Fatal(err)
	}
	var stolen []string
	var stolenMu sync.Mutex
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolenMu.Lock()
		stolen = append(stolen, r.URL.String())
		stolenMu.Unlock()
	}))
	t.Cleanup(other.Close)
	front := httptest.NewServer(&hostile{sim: sim.Handler(), other: other.URL})
	t.Cleanup(front.Close)

	lakeDir := filepath.Join(t.TempDir(), "lake")
	lake, err := sink.NewLocal(lakeDir)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := tokenstore.NewFile(filepath.Join(t.TempDir(), "tokens"))
	if err != nil {
		t.Fatal(err)
	}
	tc, err := client.Dial(client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace(), Logger: sdklog.NewStructuredLogger(lg)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	// Lineage events go to a file and to an endpoint that records what
	// it receives; its API key is a secret like the others.
	const lineageKey = "canaryLINEAGEapiKEY0123456789"
	var lineageBodies bytes.Buffer
	var lineageMu sync.Mutex
	var lineageUnauthorized int
	lineageSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		lineageMu.Lock()
		defer lineageMu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+lineageKey {
			lineageUnauthorized++
		}
		lineageBodies.Write(b)
		lineageBodies.WriteByte('\n')
	}))
	t.Cleanup(lineageSrv.Close)
	lineageFile := filepath.Join(t.TempDir(), "lineage.jsonl")
	w, err := worker.Start(worker.Options{
		Client: tc, Config: activities.Config{Registry: reg, Sink: lake, Logger: lg, TokenStore: tokens,
			BaseURLs:    map[string]string{"*": front.URL},
			Credentials: connector.MapCredentials(canaries), LineageLake: lineage.LocalLake(lakeDir)},
		// A race-built in-process server answers permit updates slowly.
		Tolerance:   2 * time.Second,
		MetricsAddr: "127.0.0.1:0",
		LineageDest: lineage.Options{URL: lineageSrv.URL + "/api/v1/lineage", File: lineageFile, APIKey: lineageKey},
	})
	if err != nil {
		t.Fatal(err)
	}
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(w.Stop) }
	t.Cleanup(stop)

	const date = "2025-03-10"
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.DailyWorkflowID(date), TaskQueue: worker.DefaultTaskQueue},
		workflows.DailyIngestName, workflows.DailyIngestInput{Date: date})
	if err != nil {
		t.Fatal(err)
	}
	var res workflows.DailyIngestResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}

	// The ingest went as the hostile provider made it go: the redirected
	// dataset failed naming the other host, the others retried and
	// succeeded.
	otherHost := strings.TrimPrefix(other.URL, "http://")
	for _, r := range res.Results {
		switch r.Dataset {
		case connectortest.ECOSDataset:
			if r.Status != workflows.StatusFailed || r.ErrorType != "bad_request" || !strings.Contains(r.Error, otherHost) {
				t.Errorf("%s: %+v; want it refused as a redirect to %s", r.Dataset, r, otherHost)
			}
		case connectortest.FREDDataset, connectortest.KISDataset, connectortest.DataGoDataset:
			// (The simulator's data.go.kr index has no rows for the date.)
			if (r.Status != workflows.StatusOK && r.Dataset != connectortest.DataGoDataset) || r.Status == workflows.StatusFailed || r.Attempts != 2 {
				t.Errorf("%s: %+v; want an answer on the second attempt", r.Dataset, r)
			}
		}
	}
	stolenMu.Lock()
	if len(stolen) != 0 {
		t.Errorf("the host ECOS redirected to received %q", stolen)
	}
	stolenMu.Unlock()

	secrets := connectortest.SecretValuesOf(canaries)
	secrets = append(secrets, issuedTokens(t, tokens, front.URL)...)

	// Every workflow's history, in its wire form.
	var history bytes.Buffer
	var failures int
	resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: srv.Namespace(), PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Executions) < 3 {
		t.Fatalf("listed %d workflows; want the batch, the limiters and the events workflow", len(resp.Executions))
	}
	for _, ex := range resp.Executions {
		it := tc.GetWorkflowHistory(ctx, ex.Execution.WorkflowId, ex.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			b, err := proto.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			history.Write(b)
			if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.LastFailure != nil {
				failures++
			}
			if ev.GetActivityTaskFailedEventAttributes() != nil {
				failures++
			}
		}
	}
	// The history holds the failures the test means to check: FRED's,
	// data.go.kr's and KIS's echoes (each the last failure before a
	// success) and ECOS's refused redirect.
	if failures < 4 {
		t.Errorf("the histories hold %d activity failures; want at least 4", failures)
	}
	assertNoSecret(t, "workflow history", history.String(), secrets)

	// Logs of the worker, the SDK and the server.
	if !strings.Contains(logs.String(), "provider call") {
		t.Fatal("the log capture holds no provider call")
	}
	assertNoSecret(t, "logs", logs.String(), secrets)

	// Metrics labels (and values).
	mresp, err := http.Get("http://" + w.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scrape, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !bytes.Contains(scrape, []byte("sluice_provider_calls_total")) {
		t.Fatalf("the scrape holds no provider calls:\n%s", scrape)
	}
	assertNoSecret(t, "/metrics", string(scrape), secrets)

	// Every object's metadata, and every byte in the lake.
	var metas []string
	if err := lake.List(ctx, "", func(o sink.Object) error {
		b, _ := json.Marshal(o)
		metas = append(metas, string(b))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(metas) < 3 {
		t.Fatalf("the lake holds %d objects; want the retried datasets' objects", len(metas))
	}
	joined := strings.Join(metas, "\n")
	if !strings.Contains(joined, "api_key=REDACTED") {
		t.Errorf("no FRED source URL with its key redacted in %s", joined)
	}
	assertNoSecret(t, "object metadata", joined, secrets)
	err = filepath.WalkDir(lakeDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		assertNoSecret(t, "lake file "+path, string(b), secrets)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Lineage: the worker's Stop drains the queue; every event is valid,
	// each attempt has its START and its end (the echoing attempts
	// FAILed), and no secret, nor the lineage key, is in any of them.
	stop()
	lines := lineagetest.Lines(t, lineageFile)
	ends := map[string]string{}
	for _, l := range lines {
		var ev lineage.Event
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.EventType != lineage.Start {
			ends[ev.Run.RunID] = string(ev.EventType)
		}
	}
	var fails int
	for _, e := range ends {
		if e == string(lineage.Fail) {
			fails++
		}
	}
	if len(lines) != 2*len(ends) || fails < 4 {
		t.Errorf("%d lineage events, %d runs ended, %d failed; want a START and an end per run, the echoed attempts failed", len(lines), len(ends), fails)
	}
	lineageMu.Lock()
	sent := lineageBodies.String()
	unauthorized := lineageUnauthorized
	lineageMu.Unlock()
	if strings.Count(sent, "\n") != len(lines) || unauthorized != 0 {
		t.Errorf("the lineage endpoint received %d events (%d without the key); the file holds %d", strings.Count(sent, "\n"), unauthorized, len(lines))
	}
	fileBytes, err := os.ReadFile(lineageFile)
	if err != nil {
		t.Fatal(err)
	}
	withKey := append(append([]string{}, secrets...), lineageKey)
	assertNoSecret(t, "lineage file", string(fileBytes), withKey)
	assertNoSecret(t, "lineage endpoint", sent, withKey)
	assertNoSecret(t, "logs after stopping", logs.String(), withKey)
}

// issuedTokens returns the KIS token the store holds for the canary app
// key (the simulator issued it): a secret too.
func issuedTokens(t *testing.T, store connector.TokenStore, baseURL string) []string {
	t.Helper()
	tok, ok, err := store.Load(context.Background(), kis.TokenKey(baseURL, canaries["KIS_APP_KEY"], canaries["KIS_APP_SECRET"]))
	if err != nil || !ok || tok.AccessToken == "" {
		t.Fatalf("no KIS token in the store (%v): the test needs one to look for", err)
	}
	return []string{tok.AccessToken}
}

// assertNoSecret fails when text holds any secret in any literal spelling
// (connector.SecretForms), or any run of ten of its letters and digits —
// which every escape leaves as it is, so a partial or re-encoded leak
// shows too.
func assertNoSecret(t *testing.T, what, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		for _, f := range append(connector.SecretForms(s), alnumRuns(s, 10)...) {
			if i := strings.Index(text, f); i >= 0 {
				lo, hi := max(0, i-120), min(len(text), i+len(f)+60)
				t.Errorf("%s leaks a secret (as %q): …%q…", what, f, text[lo:hi])
				break
			}
		}
	}
}

// alnumRuns returns the runs of at least n letters and digits in s.
func alnumRuns(s string, n int) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		alnum := i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z')
		switch {
		case alnum && start < 0:
			start = i
		case !alnum && start >= 0:
			if i-start >= n {
				out = append(out, s[start:i])
			}
			start = -1
		}
	}
	return out
}
