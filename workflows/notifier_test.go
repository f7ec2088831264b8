package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/notify"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/workflows"
)

// hookReceiver is a webhook receiver on loopback that verifies each
// delivery's signature, keeps each idempotency key once and refuses
// (503) every delivery until it is up.
type hookReceiver struct {
	key []byte

	mu       sync.Mutex
	up       func() bool
	attempts int
	refused  int
	badSig   int
	got      map[string]notify.WebhookBody
	order    []string
}

func newHookReceiver(t *testing.T, key string, up func() bool) (*hookReceiver, string) {
	t.Helper()
	rc := &hookReceiver{key: []byte(key), up: up, got: map[string]notify.WebhookBody{}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

func (rc *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.attempts++
	if rc.up != nil && !rc.up() {
		rc.refused++
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	if err := notify.Verify(rc.key, r.Header, body, time.Now(), 0); err != nil {
		rc.badSig++
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	id := r.Header.Get(notify.HeaderIdempotency)
	if _, dup := rc.got[id]; !dup {
		var b notify.WebhookBody
		if err := json.Unmarshal(body, &b); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.got[id] = b
		rc.order = append(rc.order, id)
	}
	w.WriteHeader(http.StatusOK)
}

func (rc *hookReceiver) kept() []notify.WebhookBody {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make([]notify.WebhookBody, len(rc.order))
	for i, id := range rc.order {
		out[i] = rc.got[id]
	}
	return out
}

// notifierEnv runs the notifier with its activities delivering, through
// notify.Sender, to the sinks of cfg.
type notifierEnv struct {
	env      *testsuite.TestWorkflowEnvironment
	attempts []time.Time // every delivery attempt, on the workflow clock
	mu       sync.Mutex
}

func newNotifierEnv(t *testing.T, cfg *notify.Config) *notifierEnv {
	t.Helper()
	var ts testsuite.WorkflowTestSuite
	ne := &notifierEnv{env: ts.NewTestWorkflowEnvironment()}
	ne.env.RegisterWorkflowWithOptions(workflows.Notifier, workflow.RegisterOptions{Name: workflows.NotifierName})
	var a *activities.Activities
	ne.env.RegisterActivity(a)
	ne.env.OnActivity(a.NotifySinks, mock.Anything).Return(func(context.Context) ([]string, error) { return cfg.Names(), nil })
	ne.env.OnActivity(a.NotifyDeliver, mock.Anything, mock.Anything).Return(func(ctx context.Context, d activities.NotifyDelivery) error {
		ne.mu.Lock()
		ne.attempts = append(ne.attempts, ne.env.Now())
		ne.mu.Unlock()
		return notify.Sender{}.Send(ctx, *cfg.Sink(d.Sink), d.Notification)
	})
	return ne
}

// signalAt sends changes to the notifier after d of workflow time.
func (ne *notifierEnv) signalAt(d time.Duration, changes []notify.Change) {
	ne.env.RegisterDelayedCallback(func() { ne.env.SignalWorkflow(workflows.NotifierSignal, changes) }, d)
}

func (ne *notifierEnv) status(t *testing.T) workflows.NotifierStatus {
	t.Helper()
	v, err := ne.env.QueryWorkflow(workflows.NotifierStateQuery)
	if err != nil {
		t.Fatal(err)
	}
	var st workflows.NotifierStatus
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

var notifyT0 = time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)

func downChanges(provider string, from, n int) []notify.Change {
	var out []notify.Change
	for i := from; i < from+n; i++ {
		ds := fmt.Sprintf("%s.d%03d", provider, i)
		c, ok := notify.FromWatch(provider, watch.Change{At: notifyT0.Add(time.Duration(i) * time.Second), Dataset: ds,
			Kind: watch.ChangeState, From: "up", To: "down", Summary: ds + " up → down"})
		if !ok {
			panic("not notified")
		}
		out = append(out, c)
	}
	return out
}

// TestNotifierGroupsAProvidersDatasetsIntoOneMessage: 100 datasets of one
// provider going down within the group window, signalled in four
// batches and one of them twice, make one message per sink.
func TestNotifierGroupsAProvidersDatasetsIntoOneMessage(t *testing.T) {
	rc, url := newHookReceiver(t, "k", nil)
	cfg := &notify.Config{Sinks: []notify.Sink{{Name: "ops", Type: notify.WebhookSink, URL: url, Key: []byte("k")}}}
	ne := newNotifierEnv(t, cfg)
	for i := range 4 {
		ne.signalAt(time.Duration(i)*10*time.Second+time.Second, downChanges("kis", 25*i, 25))
	}
	ne.signalAt(45*time.Second, downChanges("kis", 50, 25)) // again
	ne.env.RegisterDelayedCallback(func() {
		if st := ne.status(t); st.Delivered != 1 || st.Outbox != 0 || st.Pending != 0 {
			t.Errorf("status after the batch: %+v", st)
		}
		ne.env.CancelWorkflow()
	}, time.Hour)
	ne.env.ExecuteWorkflow(workflows.NotifierName, workflows.NotifierInput{GroupWindow: time.Minute})
	kept := rc.kept()
	if len(kept) != 1 || len(kept[0].Changes) != 100 || kept[0].Title != "kis: 100 datasets down" {
		t.Fatalf("receiver kept %d notifications (first: %+v), want one of 100 changes", len(kept), kept)
	}
	if rc.attempts != 1 {
		t.Errorf("%d deliveries, want 1", rc.attempts)
	}
}

// TestNotifierDeliversEveryNotificationAfterAReceiverOutage: the
// receiver is down for the first ten minutes of workflow time; a down
// and, five minutes later, the recovery are each delivered once it is
// back, exactly once per change group, within a minute of its return.
func TestNotifierDeliversEveryNotificationAfterAReceiverOutage(t *testing.T) {
	var ne *notifierEnv
	var start time.Time
	up := func() bool { return ne.env.Now().Sub(start) >= 10*time.Minute }
	rc, url := newHookReceiver(t, "k", up)
	cfg := &notify.Config{Sinks: []notify.Sink{{Name: "ops", Type: notify.WebhookSink, URL: url, Key: []byte("k")}}}
	ne = newNotifierEnv(t, cfg)
	start = ne.env.Now()
	down := downChanges("fred", 0, 1)
	recovery, _ := notify.FromWatch("fred", watch.Change{At: notifyT0.Add(5 * time.Minute), Dataset: "fred.d000",
		Kind: watch.ChangeState, From: "down", To: "up", Summary: "fred.d000 down → up"})
	ne.signalAt(time.Second, down)
	ne.signalAt(5*time.Minute, []notify.Change{recovery})
	ne.env.RegisterDelayedCallback(func() {
		if st := ne.status(t); st.Delivered != 2 || st.Outbox != 0 || st.Failed != 0 {
			t.Errorf("status: %+v", st)
		}
		ne.env.CancelWorkflow()
	}, 2*time.Hour)
	ne.env.ExecuteWorkflow(workflows.NotifierName, workflows.NotifierInput{GroupWindow: 30 * time.Second})

	kept := rc.kept()
	if len(kept) != 2 || kept[0].Changes[0].Kind != notify.Down || kept[1].Changes[0].Kind != notify.Up {
		t.Fatalf("receiver kept %+v, want the down then the recovery", kept)
	}
	if rc.refused == 0 || rc.badSig != 0 {
		t.Fatalf("refused %d, bad signatures %d: the outage did not happen", rc.refused, rc.badSig)
	}
	last := ne.attempts[len(ne.attempts)-1].Sub(start)
	if last < 10*time.Minute || last > 11*time.Minute+30*time.Second {
		t.Errorf("last delivery at %s of workflow time, want within a minute (and the group window) of the receiver's return at 10m", last)
	}
	t.Logf("%d attempts, %d refused during the outage, both delivered by %s", rc.attempts, rc.refused, last)
}

// TestNotifierCarriesUndeliveredNotificationsAcrossContinueAsNew: a run
// that ends while a delivery is still being retried hands it to the
// next run.
func TestNotifierCarriesUndeliveredNotificationsAcrossContinueAsNew(t *testing.T) {
	defer workflows.SetNotifierBatchesPerRun(1)()
	_, url := newHookReceiver(t, "k", func() bool { return false })
	cfg := &notify.Config{Sinks: []notify.Sink{{Name: "ops", Type: notify.WebhookSink, URL: url, Key: []byte("k")}}}
	ne := newNotifierEnv(t, cfg)
	ne.signalAt(time.Second, downChanges("kis", 0, 2))
	ne.env.ExecuteWorkflow(workflows.NotifierName, workflows.NotifierInput{GroupWindow: time.Minute})
	var can *workflow.ContinueAsNewError
	if err := ne.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the notifier did not continue as new: %v", err)
	}
	var in workflows.NotifierInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
		t.Fatal(err)
	}
	if len(in.Outbox) != 1 || len(in.Outbox[0].Notification.Changes) != 2 || len(in.Seen) != 2 || in.GroupWindow != time.Minute {
		t.Fatalf("continued with %+v", in)
	}
}

// stepSlow steps a dataset of provider, confirmed up, through hourly
// probes answering in latencies[i] (0: the probe was held back by our own
// limiter) from notifyT0, and returns the notified changes.
func stepSlow(provider, ds string, latencies []time.Duration) []notify.Change {
	cfg := watch.Config{Policy: watch.Policy{FailuresToConfirm: 3, SuccessesToConfirm: 2, SlowAfter: 15 * time.Second, StaleAfter: 3 * time.Hour}}
	st := watch.NeverProbed(ds)
	var out []notify.Change
	for i, l := range latencies {
		p := watch.Probe{At: notifyT0.Add(time.Duration(i) * time.Hour), Dataset: ds, Provider: provider, Outcome: watch.OK, Latency: l}
		if l == 0 {
			p.Outcome = watch.Throttled
		}
		r := watch.Step(cfg, st, p)
		st = r.State
		for _, c := range r.Changes {
			if n, ok := notify.FromWatch(provider, c); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestNotifierDeliversADegradedDatasetAndItsRecovery: two datasets of
// one provider answer slowly for three probes in a row (with our own
// throttling in between, which is never news) and then in time again; the
// loopback receiver gets one signed message "2 datasets degraded" and one
// "2 datasets back up", nothing else.
func TestNotifierDeliversADegradedDatasetAndItsRecovery(t *testing.T) {
	rc, url := newHookReceiver(t, "k", nil)
	cfg := &notify.Config{Sinks: []notify.Sink{{Name: "ops", Type: notify.WebhookSink, URL: url, Key: []byte("k")}}}
	ne := newNotifierEnv(t, cfg)
	fast, slow := 300*time.Millisecond, 20*time.Second
	var degraded, recovered []notify.Change
	for _, ds := range []string{"kis.a", "kis.b"} {
		cs := stepSlow("kis", ds, []time.Duration{fast, slow, 0, slow, 0, slow, slow, fast, fast, fast})
		if len(cs) != 2 {
			t.Fatalf("%s: notified changes %+v, want degraded then back up", ds, cs)
		}
		degraded, recovered = append(degraded, cs[0]), append(recovered, cs[1])
	}
	ne.signalAt(time.Second, degraded)
	ne.signalAt(time.Hour, recovered)
	ne.env.RegisterDelayedCallback(func() {
		if st := ne.status(t); st.Delivered != 2 || st.Outbox != 0 {
			t.Errorf("status: %+v", st)
		}
		ne.env.CancelWorkflow()
	}, 3*time.Hour)
	ne.env.ExecuteWorkflow(workflows.NotifierName, workflows.NotifierInput{GroupWindow: time.Minute})
	kept := rc.kept()
	if len(kept) != 2 || kept[0].Title != "kis: 2 datasets degraded" || kept[1].Title != "kis: 2 datasets back up" {
		t.Fatalf("receiver kept %+v, want the degraded datasets then their recovery", kept)
	}
	if c := kept[0].Changes[0]; c.Kind != notify.Degraded || c.From != "up" || c.To != "degraded" || rc.badSig != 0 {
		t.Errorf("degraded change %+v, %d bad signatures", c, rc.badSig)
	}
}

// TestNotifierGroupsDownsConfirmedAtSpreadTimes: the watch spreads a
// provider's first probes over the interval, so its 100 datasets are
// confirmed down one by one over 50 minutes (one every 30 s); with a
// 2-minute group window they make one message, not 100 nor 25, while
// another provider's down in the middle makes its own. Before the
// per-provider groups, the window after the first change cut them into
// a message every 2 minutes (measured: 26 messages, 25 of them kis's).
func TestNotifierGroupsDownsConfirmedAtSpreadTimes(t *testing.T) {
	rc, url := newHookReceiver(t, "k", nil)
	cfg := &notify.Config{Sinks: []notify.Sink{{Name: "ops", Type: notify.WebhookSink, URL: url, Key: []byte("k")}}}
	ne := newNotifierEnv(t, cfg)
	for i := range 100 {
		ne.signalAt(time.Duration(i)*30*time.Second+time.Second, downChanges("kis", i, 1))
	}
	ne.signalAt(20*time.Minute, downChanges("fred", 0, 1))
	ne.signalAt(21*time.Minute, downChanges("kis", 7, 1)) // again
	ne.env.RegisterDelayedCallback(func() {
		if st := ne.status(t); st.Delivered != 2 || st.Outbox != 0 || st.Pending != 0 || st.Duplicates != 1 {
			t.Errorf("status after the outage: %+v", st)
		}
		ne.env.CancelWorkflow()
	}, 2*time.Hour)
	ne.env.ExecuteWorkflow(workflows.NotifierName, workflows.NotifierInput{GroupWindow: 2 * time.Minute})
	kept := rc.kept()
	var titles []string
	for _, k := range kept {
		titles = append(titles, k.Title)
	}
	if len(kept) != 2 || kept[0].Title != "fred: fred.d000 down" || kept[1].Title != "kis: 100 datasets down" || len(kept[1].Changes) != 100 {
		t.Fatalf("receiver kept %d notifications %q, want fred's and one of kis's 100 downs", len(kept), titles)
	}
	if rc.attempts != 2 {
		t.Errorf("%d deliveries, want 2", rc.attempts)
	}
}

// TestNotifierHoldsAProviderAtMostGroupMax: changes that keep coming
// are held no longer than GroupMax after the first: a provider's downs
// every minute for 90 minutes with a 2-minute window and a 30-minute
// bound are three messages of 30, each sent 30 minutes after its first.
func TestNotifierHoldsAProviderAtMostGroupMax(t *testing.T) {
	rc, url := newHookReceiver(t, "k", nil)
	cfg := &notify.Config{Sinks: []notify.Sink{{Name: "ops", Type: notify.WebhookSink, URL: url, Key: []byte("k")}}}
	ne := newNotifierEnv(t, cfg)
	start := ne.env.Now()
	for i := range 90 {
		ne.signalAt(time.Duration(i)*time.Minute+time.Second, downChanges("kis", i, 1))
	}
	ne.env.RegisterDelayedCallback(func() { ne.env.CancelWorkflow() }, 3*time.Hour)
	ne.env.ExecuteWorkflow(workflows.NotifierName, workflows.NotifierInput{GroupWindow: 2 * time.Minute, GroupMax: 30 * time.Minute})
	kept := rc.kept()
	if len(kept) != 3 || len(kept[0].Changes) != 30 || len(kept[1].Changes) != 30 || len(kept[2].Changes) != 30 {
		t.Fatalf("receiver kept %d notifications, want 3 of 30", len(kept))
	}
	for i, at := range ne.attempts {
		if want := time.Duration(i)*30*time.Minute + 30*time.Minute + time.Second; at.Sub(start) != want {
			t.Errorf("delivery %d at %s of workflow time, want %s", i, at.Sub(start), want)
		}
	}
}

// watched says of each change that its provider has n watched datasets,
// as the activities do (notify.Change.Watched), through the JSON the
// notifier's signal carries.
func watched(cs []notify.Change, n int) []notify.Change {
	for i := range cs {
		if err := json.Unmarshal(fmt.Appendf(nil, `{"watched":%d}`, n), &cs[i]); err != nil {
			panic(err)
		}
	}
	return cs
}

// TestNotifierSaysAProviderIsDown: all 100 watched datasets of kis
// confirmed down 30 s apart make one message saying kis is down, "kis
// down: 100 of 100 datasets" (not "kis: 100 datasets down" listing
// them), and their recovery "kis back up: 100 of 100 datasets"; one of
// fred's three watched datasets down stays a dataset's message.
func TestNotifierSaysAProviderIsDown(t *testing.T) {
	rc, url := newHookReceiver(t, "k", nil)
	cfg := &notify.Config{Sinks: []notify.Sink{{Name: "ops", Type: notify.WebhookSink, URL: url, Key: []byte("k")}}}
	ne := newNotifierEnv(t, cfg)
	for i := range 100 {
		ne.signalAt(time.Duration(i)*30*time.Second+time.Second, watched(downChanges("kis", i, 1), 100))
	}
	ne.signalAt(20*time.Minute, watched(downChanges("fred", 0, 1), 3))
	for i := range 100 {
		ds := fmt.Sprintf("kis.d%03d", i)
		up, _ := notify.FromWatch("kis", watch.Change{At: notifyT0.Add(2*time.Hour + time.Duration(i)*time.Second), Dataset: ds,
			Kind: watch.ChangeState, From: "down", To: "up", Summary: ds + " down → up"})
		ne.signalAt(2*time.Hour+time.Duration(i)*time.Second, watched([]notify.Change{up}, 100))
	}
	ne.env.RegisterDelayedCallback(func() { ne.env.CancelWorkflow() }, 4*time.Hour)
	ne.env.ExecuteWorkflow(workflows.NotifierName, workflows.NotifierInput{GroupWindow: 2 * time.Minute})
	var titles []string
	for _, k := range rc.kept() {
		titles = append(titles, k.Title)
	}
	want := []string{"fred: fred.d000 down", "kis down: 100 of 100 datasets", "kis back up: 100 of 100 datasets"}
	if fmt.Sprint(titles) != fmt.Sprint(want) {
		t.Fatalf("receiver kept %q, want %q", titles, want)
	}
	if kept := rc.kept(); len(kept[1].Changes) != 100 || len(kept[2].Changes) != 100 {
		t.Errorf("the provider's messages hold %d and %d changes, want each dataset's 100", len(kept[1].Changes), len(kept[2].Changes))
	}
}

// TestNotifierGroupTimesCrossContinueAsNew: a provider's group held when
// the notifier continues as new keeps its first and latest change times
// in the next run. kis's datasets go down one every 70 s from 1 s, with a
// 2-minute window and a 30-minute bound; fred's one down, sent at 6 min,
// ends the first run (one send a run). The next run sends kis's group 30
// minutes after its first change (at 30 min 1 s), as one run would
// have; before, the group started again with the next run and went out
// 30 minutes after it began (36 min). Likewise a group quiet since 5 min
// 51 s is sent at 7 min 51 s, not 2 minutes after the next run began
// (8 min).
func TestNotifierGroupTimesCrossContinueAsNew(t *testing.T) {
	defer workflows.SetNotifierBatchesPerRun(1)()
	tests := []struct {
		name string
		kis  int           // kis downs, one every 70 s from 1 s
		fred time.Duration // fred's down
		want time.Duration // kis's message, from the first run's start
		held int           // the changes it holds
	}{
		{"held at most group max", 60, 4 * time.Minute, 30*time.Minute + time.Second, 26},
		{"quiet for the window", 6, 4 * time.Minute, 7*time.Minute + 51*time.Second, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc, url := newHookReceiver(t, "k", nil)
			cfg := &notify.Config{Sinks: []notify.Sink{{Name: "ops", Type: notify.WebhookSink, URL: url, Key: []byte("k")}}}
			in := workflows.NotifierInput{GroupWindow: 2 * time.Minute, GroupMax: 30 * time.Minute}
			start := notifyT0
			var kisAt time.Duration
			for run := 1; run <= 3 && kisAt == 0; run++ {
				ne := newNotifierEnv(t, cfg)
				ne.env.SetStartTime(start)
				offset := start.Sub(notifyT0)
				for i := range tt.kis {
					if at := time.Duration(i)*70*time.Second + time.Second - offset; at > 0 {
						ne.signalAt(at, downChanges("kis", i, 1))
					}
				}
				if at := tt.fred - offset; at > 0 {
					ne.signalAt(at, downChanges("fred", 0, 1))
				}
				ne.env.RegisterDelayedCallback(func() { ne.env.CancelWorkflow() }, 3*time.Hour)
				ne.env.ExecuteWorkflow(workflows.NotifierName, in)
				for _, k := range rc.kept() {
					if k.Provider == "kis" && kisAt == 0 {
						kisAt = ne.attempts[len(ne.attempts)-1].Sub(notifyT0)
					}
				}
				var can *workflow.ContinueAsNewError
				if err := ne.env.GetWorkflowError(); kisAt == 0 && !errors.As(err, &can) {
					t.Fatalf("run %d ended without kis's message nor continuing as new: %v", run, err)
				} else if can != nil {
					in = workflows.NotifierInput{}
					if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
						t.Fatal(err)
					}
					start = ne.env.Now()
					t.Logf("run %d continued as new at %s with %d changes pending", run, start.Sub(notifyT0), len(in.Pending))
				}
			}
			if kisAt != tt.want {
				t.Errorf("kis's message went out at %s, want %s", kisAt, tt.want)
			}
			if kept := rc.kept(); len(kept) != 2 || kept[0].Provider != "fred" || len(kept[1].Changes) != tt.held {
				t.Errorf("receiver kept %d notifications, want fred's then kis's %d changes", len(kept), tt.held)
			}
		})
	}
}
