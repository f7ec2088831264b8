package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/watch"
)

var t0 = time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)

// stepAll steps a dataset through probes with cfg and returns the
// notified changes the steps produced.
func stepAll(provider, dataset string, outcomes []watch.Outcome, start time.Time) []Change {
	cfg := watch.Config{Policy: watch.Policy{FailuresToConfirm: 2, SuccessesToConfirm: 2, StaleAfter: time.Hour}}
	st := watch.NeverProbed(dataset)
	var out []Change
	for i, o := range outcomes {
		r := watch.Step(cfg, st, watch.Probe{At: start.Add(time.Duration(i) * time.Minute), Dataset: dataset, Provider: provider, Outcome: o})
		st = r.State
		for _, c := range r.Changes {
			if n, ok := FromWatch(provider, c); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

func TestDownAndRecoveryAreNotifiedFirstUpIsNot(t *testing.T) {
	got := stepAll("kis", "kis.a", []watch.Outcome{watch.OK, watch.Network, watch.Network, watch.OK, watch.OK}, t0)
	if len(got) != 2 || got[0].Kind != Down || got[1].Kind != Up {
		t.Fatalf("changes = %+v, want down then up (the first unknown → up is no recovery)", got)
	}
	if got[0].Key == got[1].Key || got[0].Key == "" {
		t.Fatalf("keys %q %q: want distinct, non-empty", got[0].Key, got[1].Key)
	}
}

func TestThrottlingIsNeverNotified(t *testing.T) {
	// Up, then a long run of our own throttling and the provider's
	// rate-limit answers: no change, so nothing is notified.
	outcomes := []watch.Outcome{watch.OK}
	for range 20 {
		outcomes = append(outcomes, watch.Throttled, watch.RateLimited)
	}
	if got := stepAll("kis", "kis.a", outcomes, t0); len(got) != 0 {
		t.Fatalf("throttled probes notified %+v", got)
	}
	for _, kind := range []string{watch.KindProbeThrottled, watch.KindProbeRateLimited, "ratelimit.backoff"} {
		if n, ok := FromEvent(watch.Event{Kind: kind, At: t0, Provider: "kis"}); ok {
			t.Errorf("event %s notified: %+v", kind, n)
		}
	}
	if _, ok := FromEvent(watch.Event{Kind: QuotaEventKind, At: t0, Provider: "kis", Scope: "kis/day"}); !ok {
		t.Error("an exhausted quota is not notified")
	}
}

func downs(provider string, n int, at time.Time) []Change {
	var out []Change
	for i := range n {
		c, ok := FromWatch(provider, watch.Change{At: at.Add(time.Duration(i) * time.Second), Dataset: fmt.Sprintf("%s.d%03d", provider, i),
			Kind: watch.ChangeState, From: "up", To: "down", Summary: fmt.Sprintf("%s.d%03d up → down", provider, i)})
		if !ok {
			panic("not notified")
		}
		out = append(out, c)
	}
	return out
}

func TestHundredDatasetsOfOneProviderAreOneMessage(t *testing.T) {
	batch := append(downs("kis", 100, t0), downs("fred", 1, t0)...)
	batch = append(batch, batch[3]) // a change signalled twice
	got := Group(batch)
	if len(got) != 2 {
		t.Fatalf("%d notifications, want 2 (fred, kis)", len(got))
	}
	kis := got[1]
	if kis.Provider != "kis" || len(kis.Changes) != 100 || kis.Title != "kis: 100 datasets down" {
		t.Fatalf("kis notification: provider %s, %d changes, title %q", kis.Provider, len(kis.Changes), kis.Title)
	}
	if got[0].Title != "fred: fred.d000 down" {
		t.Errorf("fred title %q", got[0].Title)
	}
	// The id is the group's: the same changes in another order give it.
	rev := append([]Change(nil), batch...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	if again := Group(rev); again[1].ID != kis.ID {
		t.Errorf("group id changed with the order: %s vs %s", again[1].ID, kis.ID)
	}
	if other := Group(batch[:99]); other[0].ID == kis.ID {
		t.Error("a different group has the same id")
	}
}

func TestMaintenanceWindowSilencesUntilItsEnd(t *testing.T) {
	windows := []Window{
		{Provider: "kis", Start: t0, End: t0.Add(time.Hour), Reason: "KIS maintenance"},
		{Dataset: "fred.d000", Start: t0, End: t0.Add(time.Hour)},
	}
	during := append(downs("kis", 3, t0.Add(10*time.Minute)), downs("fred", 2, t0.Add(10*time.Minute))...)
	kept, silenced := Silence(during, windows)
	if len(kept) != 1 || kept[0].Dataset != "fred.d001" || len(silenced) != 4 {
		t.Fatalf("during: kept %+v, silenced %d", kept, len(silenced))
	}
	after := downs("kis", 3, t0.Add(time.Hour)) // the end is exclusive
	if kept, _ := Silence(after, windows); len(kept) != 3 {
		t.Fatalf("after the end: kept %d of 3", len(kept))
	}
	before := downs("kis", 1, t0.Add(-time.Second))
	if kept, _ := Silence(before, windows); len(kept) != 1 {
		t.Fatal("a change before the window was silenced")
	}
	if err := (Window{Provider: "kis", Start: t0, End: t0}).Validate(); err == nil {
		t.Error("an empty window validated")
	}
}

// receiver is a webhook receiver on loopback: it verifies signatures with
// its key, dedupes by idempotency key and refuses the first failFirst
// deliveries (its outage).
type receiver struct {
	key       []byte
	failFirst int

	mu       sync.Mutex
	attempts int
	refused  int
	badSig   int
	got      map[string]WebhookBody
	order    []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.attempts++
	if rc.attempts <= rc.failFirst {
		rc.refused++
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if err := Verify(rc.key, r.Header, body, time.Now(), 0); err != nil {
		rc.badSig++
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	id := r.Header.Get(HeaderIdempotency)
	if _, seen := rc.got[id]; !seen {
		var wb WebhookBody
		if err := json.Unmarshal(body, &wb); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.got[id] = wb
		rc.order = append(rc.order, id)
	}
	w.WriteHeader(http.StatusNoContent)
}

func newReceiver(t *testing.T, key string, failFirst int) (*receiver, string) {
	rc := &receiver{key: []byte(key), failFirst: failFirst, got: map[string]WebhookBody{}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

func TestWebhookSignedAndVerifiedOnLoopback(t *testing.T) {
	rc, url := newReceiver(t, "right-key", 0)
	n := Group(downs("kis", 2, t0))[0]
	s := Sender{}
	if err := s.Send(context.Background(), Sink{Name: "ops", Type: WebhookSink, URL: url + "/hook?token=s3cret", Key: []byte("right-key")}, n); err != nil {
		t.Fatal(err)
	}
	if got := rc.got[n.ID]; got.ID != n.ID || len(got.Changes) != 2 || got.Version != SchemaVersion {
		t.Fatalf("receiver got %+v", got)
	}
	// The same key twice is acknowledged once.
	if err := s.Send(context.Background(), Sink{Name: "ops", Type: WebhookSink, URL: url, Key: []byte("right-key")}, n); err != nil {
		t.Fatal(err)
	}
	if len(rc.order) != 1 {
		t.Fatalf("receiver kept %d notifications, want 1", len(rc.order))
	}
	// A sender with the wrong key: the receiver's verification fails.
	err := s.Send(context.Background(), Sink{Name: "ops", Type: WebhookSink, URL: url + "/hook?token=s3cret", Key: []byte("wrong-key")}, n)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized || rc.badSig != 1 {
		t.Fatalf("wrong key: err %v, bad signatures %d", err, rc.badSig)
	}
	if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "wrong-key") {
		t.Fatalf("error leaks a secret: %v", err)
	}
}

func TestVerifyRefusesAWrongKeyAChangedBodyAndAnOldTimestamp(t *testing.T) {
	body := []byte(`{"id":"x"}`)
	h := http.Header{}
	h.Set(HeaderTimestamp, fmt.Sprint(t0.Unix()))
	h.Set(HeaderSignature, Sign([]byte("k1"), t0, body))
	if err := Verify([]byte("k1"), h, body, t0.Add(time.Minute), 0); err != nil {
		t.Fatalf("right key: %v", err)
	}
	if err := Verify([]byte("k2"), h, body, t0, 0); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("wrong key: %v", err)
	}
	if err := Verify([]byte("k1"), h, []byte(`{"id":"y"}`), t0, 0); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("changed body: %v", err)
	}
	if err := Verify([]byte("k1"), h, body, t0.Add(time.Hour), 0); err == nil {
		t.Fatal("a delivery an hour old verified")
	}
}

func TestSlackBody(t *testing.T) {
	n := Group(downs("kis", 30, t0))[0]
	b, err := Slack(n)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.Text, "kis: 30 datasets down") || !strings.Contains(v.Text, "…and 10 more") || len(v.Blocks) != 2 {
		t.Fatalf("slack body %s", b)
	}
}

func TestParseNamesFileFieldAndValue(t *testing.T) {
	env := map[string]string{"HOOK_URL": "https://example.test/h?token=t0ken", "HOOK_KEY": "k", "BAD_URL": "ftp://x"}
	lookup := func(name string) (string, error) {
		if v, ok := env[name]; ok {
			return v, nil
		}
		return "", fmt.Errorf("set %s or %s_FILE", name, name)
	}
	cfg, err := Parse("n.yaml", []byte("group_seconds: 30\ngroup_max_seconds: 1800\nsinks:\n  - {name: ops, type: webhook, url_env: HOOK_URL, key_env: HOOK_KEY}\n"), lookup)
	if err != nil || cfg.GroupWindow != 30*time.Second || cfg.GroupMax != 30*time.Minute || cfg.Sink("ops").URL != env["HOOK_URL"] || string(cfg.Sink("ops").Key) != "k" {
		t.Fatalf("cfg %+v, err %v", cfg, err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"sinks:\n  - {name: ops, type: pager, url_env: HOOK_URL}\n", `n.yaml: sinks[0].type: "pager"`},
		{"sinks:\n  - {name: Ops!, type: webhook, url_env: HOOK_URL}\n", `n.yaml: sinks[0].name: "Ops!"`},
		{"sinks:\n  - {name: ops, type: webhook, url_env: NOPE}\n", `n.yaml: sinks[0].url_env: NOPE`},
		{"sinks:\n  - {name: ops, type: webhook, url_env: BAD_URL}\n", `n.yaml: sinks[0].url_env: the URL in BAD_URL is not`},
		{"group_seconds: -1\n", `n.yaml: group_seconds: -1`},
		{"group_max_seconds: 90000\n", `n.yaml: group_max_seconds: 90000 out of range`},
		{"sinks:\n  - {name: s, type: slack, url_env: HOOK_URL, key_env: HOOK_KEY}\n", `n.yaml: sinks[0].key_env: "HOOK_KEY"`},
	} {
		_, err := Parse("n.yaml", []byte(tc.yaml), lookup)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "t0ken") {
			t.Errorf("error leaks the URL: %v", err)
		}
	}
	cfg, err = Load("", lookup)
	if err != nil || len(cfg.Sinks) != 0 {
		t.Fatalf("no variables: %+v %v", cfg, err)
	}
}

// withWatched says of each change that its provider has n watched
// datasets, as the activities do (Change.Watched).
func withWatched(cs []Change, n int) []Change {
	out := append([]Change(nil), cs...)
	for i := range out {
		out[i].Watched = n
	}
	return out
}

func ups(provider string, n int, at time.Time, from string) []Change {
	var out []Change
	for i := range n {
		ds := fmt.Sprintf("%s.d%03d", provider, i)
		kind := watch.ChangeState
		if from == "degraded" {
			kind = watch.ChangeDegraded
		}
		c, ok := FromWatch(provider, watch.Change{At: at.Add(time.Duration(i) * time.Second), Dataset: ds, Kind: kind, From: from, To: "up",
			Summary: ds + " " + from + " → up"})
		if !ok {
			panic("not notified")
		}
		out = append(out, c)
	}
	return out
}

// TestGroupProvidersSaysTheProviderIsDown: when every watched dataset of
// a provider went down within the group, the message is the provider's
// down — "kis down: 100 of 100 datasets" — and its recovery likewise;
// fewer than all, recoveries from slowness, a dataset back up within the
// group, or changes that do not say how many datasets are watched stay
// the datasets' message.
func TestGroupProvidersSaysTheProviderIsDown(t *testing.T) {
	late, _ := FromWatch("kis", watch.Change{At: t0.Add(time.Hour), Dataset: "kis.d001", Kind: watch.ChangeLate, Summary: "kis.d001 late"})
	late2, _ := FromWatch("kis", watch.Change{At: t0.Add(time.Hour), Dataset: "kis.d002", Kind: watch.ChangeLate, Summary: "kis.d002 late"})
	oneUp := ups("kis", 1, t0.Add(time.Hour), "down")
	tests := []struct {
		name    string
		changes []Change
		state   Kind
		title   string
	}{
		{"all 100 down", withWatched(downs("kis", 100, t0), 100), Down, "kis down: 100 of 100 datasets"},
		{"all 100 back up", withWatched(ups("kis", 100, t0, "down"), 100), Up, "kis back up: 100 of 100 datasets"},
		{"all down and two late", withWatched(append(downs("kis", 100, t0), late, late2), 100), Down, "kis down: 100 of 100 datasets; 2 late"},
		{"99 of 100 down", withWatched(downs("kis", 99, t0), 100), "", "kis: 99 datasets down"},
		{"watched not said", downs("kis", 100, t0), "", "kis: 100 datasets down"},
		{"one back up within the group", withWatched(append(downs("kis", 100, t0), oneUp...), 100), "", "kis: 100 down, 1 back up"},
		{"back up from slowness", withWatched(ups("kis", 100, t0, "degraded"), 100), "", "kis: 100 datasets back up"},
		{"down and back up within the group", withWatched(append(downs("kis", 3, t0), ups("kis", 3, t0.Add(time.Hour), "down")...), 3), "", "kis: 3 down, 3 back up"},
		{"the largest watched count holds", append(withWatched(downs("kis", 2, t0), 2), withWatched(downs("kis", 3, t0)[2:], 4)...), "", "kis: 3 datasets down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := GroupProviders(tt.changes)
			if len(ns) != 1 {
				t.Fatalf("%d notifications", len(ns))
			}
			n := ns[0]
			if n.State != tt.state || n.Title != tt.title || len(n.Changes) != len(tt.changes) {
				t.Errorf("state %q, title %q, %d changes; want %q, %q, %d", n.State, n.Title, len(n.Changes), tt.state, tt.title, len(tt.changes))
			}
			if tt.state != "" && n.Watched == 0 {
				t.Errorf("state %s with no watched count", n.State)
			}
			if old := Group(tt.changes)[0]; old.State != "" || old.ID != n.ID {
				t.Errorf("Group: state %q, id %s (GroupProviders' %s): want no state and the same id", old.State, old.ID, n.ID)
			}
		})
	}
	// One line for the provider in Slack, and the changes it does not
	// cover listed.
	n := GroupProviders(withWatched(append(downs("kis", 100, t0), late), 100))[0]
	b, err := Slack(n)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	want := "kis down: 100 of 100 datasets; 1 late\n• all 100 watched datasets of kis down\n• kis.d001 late"
	if v.Text != want {
		t.Errorf("slack text %q, want %q", v.Text, want)
	}
	// The webhook says the state and keeps every change for machines.
	b, err = Webhook(n)
	if err != nil {
		t.Fatal(err)
	}
	var wb WebhookBody
	if err := json.Unmarshal(b, &wb); err != nil || wb.State != Down || wb.Watched != 100 || len(wb.Changes) != 101 || wb.Changes[0].Watched != 100 {
		t.Errorf("webhook body state %q watched %d, %d changes: %v", wb.State, wb.Watched, len(wb.Changes), err)
	}
}
