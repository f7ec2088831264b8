// Package replaycheck replays a recorded workflow history and compares
// every update answer the replayed code gives with the answer the history
// recorded, and, for the activities named in Options.Activities, every
// activity input it schedules with the input the history recorded. The replayer alone only reports commands that differ; a
// workflow that answers updates from its state (the rate limiter issues no
// command but continue-as-new) can drift silently, answering differently on
// replay than it did when the history was written. Queries leave nothing
// in a history, so only update answers can be compared.
package replaycheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Options say how a history is replayed.
type Options struct {
	// Register registers the workflows the history may run.
	Register func(r worker.WorkflowReplayer)
	// DataConverter and FailureConverter are the ones the workers use
	// (nil: the SDK's defaults).
	DataConverter    converter.DataConverter
	FailureConverter converter.FailureConverter
	// OriginalExecution is the recorded run's execution, for workflows
	// whose behaviour depends on their id.
	OriginalExecution workflow.Execution
	// Added names the answer fields (JSON keys, at any depth) that the
	// workflow learnt to send after the history was recorded: a replayed
	// answer may carry them where the recorded one does not. Any other
	// field the recorded answer lacks must be zero on replay (a field added
	// later and omitted or zero), and every field it holds must be equal.
	Added []string
	// Upgrade, if set, turns a recorded answer to update name (decoded
	// JSON) into the shape the workflow answers in now, for a history
	// recorded under an older protocol whose fields changed type.
	Upgrade func(name string, answer any) any
	// Known are updates, by id, whose answers are known to differ, with
	// why: they are reported in Result.Known, not in Diffs.
	Known map[string]string
	// Activities names the activity types whose inputs are compared: the
	// nth scheduling of each on replay must carry the input its nth
	// ActivityTaskScheduled event recorded (a workflow that answers no
	// update — the notifier — decides what it does in these inputs). A
	// differing input is a Diff whose UpdateID is "activity TYPE #n".
	Activities []string
}

// Diff is one update whose replayed answer differs from the recorded one.
type Diff struct {
	UpdateID string
	Name     string
	// Recorded and Replayed are the answers as canonical JSON, or
	// "error: …" for a failure.
	Recorded, Replayed string
}

// Result is what a replay found.
type Result struct {
	// Recorded is how many update answers (and compared activity inputs)
	// the history holds; Compared how many of them the replay gave too.
	Recorded, Compared int
	// Names counts the recorded answers per update name.
	Names map[string]int
	// Diffs are the answers that differ, or that the replay never gave,
	// in history order.
	Diffs []Diff
	// Known are the differing answers listed in Options.Known.
	Known []Diff
}

// DiffsNamed returns how many differing answers are of update name.
func (r Result) DiffsNamed(name string) int {
	n := 0
	for _, d := range r.Diffs {
		if d.Name == name {
			n++
		}
	}
	return n
}

// ReplayFile replays the JSON history at path and compares its update
// answers. An error is a replay failure (nondeterminism, a panic) or an
// unreadable history; differing answers are in the result.
func ReplayFile(path string, opt Options) (Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return Result{}, fmt.Errorf("opening history: %w", err)
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		return Result{}, fmt.Errorf("reading history %s: %w", path, err)
	}
	dc := opt.DataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	type recorded struct {
		id, name, answer string
		value            any
	}
	names := map[string]string{} // update id → name
	var want []recorded
	compared := map[string]bool{}
	for _, a := range opt.Activities {
		compared[a] = true
	}
	scheduled := map[string]int{}
	for _, e := range h.GetEvents() {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && compared[a.GetActivityType().GetName()] {
			typ := a.GetActivityType().GetName()
			id := activityID(typ, scheduled[typ])
			scheduled[typ]++
			var raw json.RawMessage
			if p := a.GetInput().GetPayloads(); len(p) > 0 {
				if err := dc.FromPayload(p[0], &raw); err != nil {
					return Result{}, fmt.Errorf("decoding the recorded input of %s: %w", id, err)
				}
			}
			answer, value, err := canonical(raw)
			if err != nil {
				return Result{}, fmt.Errorf("decoding the recorded input of %s: %w", id, err)
			}
			names[id] = typ
			want = append(want, recorded{id: id, name: typ, answer: answer, value: value})
			continue
		}
		if a := e.GetWorkflowExecutionUpdateAcceptedEventAttributes(); a != nil {
			names[a.GetAcceptedRequest().GetMeta().GetUpdateId()] = a.GetAcceptedRequest().GetInput().GetName()
		}
		c := e.GetWorkflowExecutionUpdateCompletedEventAttributes()
		if c == nil {
			continue
		}
		id := c.GetMeta().GetUpdateId()
		var answer string
		var value any
		if fl := c.GetOutcome().GetFailure(); fl != nil {
			answer = "error: " + fl.GetMessage()
		} else {
			var raw json.RawMessage
			if p := c.GetOutcome().GetSuccess().GetPayloads(); len(p) > 0 {
				if err := dc.FromPayload(p[0], &raw); err != nil {
					return Result{}, fmt.Errorf("decoding the recorded answer to update %s: %w", id, err)
				}
			}
			if answer, value, err = canonical(raw); err != nil {
				return Result{}, fmt.Errorf("decoding the recorded answer to update %s: %w", id, err)
			}
		}
		if opt.Upgrade != nil && value != nil {
			value = opt.Upgrade(names[id], value)
		}
		want = append(want, recorded{id: id, name: names[id], answer: answer, value: value})
	}

	fc := opt.FailureConverter
	if fc == nil {
		fc = temporal.GetDefaultFailureConverter()
	}
	cap := &capture{dc: dc, fc: fc, got: map[string]answer{}, activities: compared, scheduled: map[string]int{}}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
		DataConverter: opt.DataConverter, FailureConverter: opt.FailureConverter,
		Interceptors: []interceptor.WorkerInterceptor{cap},
	})
	if err != nil {
		return Result{}, fmt.Errorf("creating replayer: %w", err)
	}
	opt.Register(r)
	if err := r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{OriginalExecution: opt.OriginalExecution}); err != nil {
		return Result{}, fmt.Errorf("replaying %s: %w", path, err)
	}
	cap.mu.Lock()
	defer cap.mu.Unlock()
	if cap.err != nil {
		return Result{}, cap.err
	}
	added := map[string]bool{}
	for _, k := range opt.Added {
		added[k] = true
	}
	res := Result{Recorded: len(want), Names: map[string]int{}}
	for _, w := range want {
		res.Names[w.name]++
		got, ok := cap.got[w.id]
		if !ok {
			res.Diffs = append(res.Diffs, Diff{UpdateID: w.id, Name: w.name, Recorded: w.answer, Replayed: "(not answered on replay)"})
			continue
		}
		res.Compared++
		if got.text != w.answer && !same(w.value, got.value, added) {
			d := Diff{UpdateID: w.id, Name: w.name, Recorded: w.answer, Replayed: got.text}
			if _, ok := opt.Known[w.id]; ok {
				res.Known = append(res.Known, d)
			} else {
				res.Diffs = append(res.Diffs, d)
			}
		}
	}
	return res, nil
}

// same reports whether a replayed answer b says what the recorded a says:
// equal values for every field of a, and every other field of b zero or
// added since.
func same(a, b any, added map[string]bool) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return false
		}
		for k, av := range a {
			if !same(av, bm[k], added) {
				return false
			}
		}
		for k, bv := range bm {
			if _, ok := a[k]; !ok && !added[k] && !zero(bv) {
				return false
			}
		}
		return true
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return zero(a) && zero(b)
		}
		for i := range a {
			if !same(a[i], bs[i], added) {
				return false
			}
		}
		return true
	case nil:
		return zero(b)
	}
	if zero(a) && zero(b) {
		return true
	}
	return a == b
}

// zero reports whether a JSON value is the encoding of a Go zero value.
func zero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case json.Number:
		return v == "0"
	case string:
		return v == "" || v == "0001-01-01T00:00:00Z"
	case []any:
		return len(v) == 0
	case map[string]any:
		for _, x := range v {
			if !zero(x) {
				return false
			}
		}
		return true
	}
	return false
}

// canonical is a JSON value re-encoded with sorted keys and no spacing,
// and the value decoded.
func canonical(raw []byte) (string, any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "null", nil, nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", nil, err
	}
	out, err := json.Marshal(v)
	return string(out), v, err
}

// answer is one update answer as canonical JSON and decoded.
type answer struct {
	text  string
	value any
}

// capture is the interceptor that keeps each replayed update's answer.
type capture struct {
	interceptor.WorkerInterceptorBase
	dc  converter.DataConverter
	fc  converter.FailureConverter
	mu  sync.Mutex
	got map[string]answer
	err error
	// activities are the activity types whose inputs are kept, by
	// activityID; scheduled counts their schedulings.
	activities map[string]bool
	scheduled  map[string]int
}

// activityID names the nth (from 0) scheduling of an activity type.
func activityID(typ string, n int) string { return fmt.Sprintf("activity %s #%d", typ, n+1) }

func (c *capture) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	i := &inbound{c: c}
	i.Next = next
	return i
}

type inbound struct {
	interceptor.WorkflowInboundInterceptorBase
	c *capture
}

// Init puts the outbound interceptor that keeps activity inputs in the
// chain.
func (i *inbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	o := &outboundCapture{c: i.c}
	o.Next = outbound
	return i.Next.Init(o)
}

type outboundCapture struct {
	interceptor.WorkflowOutboundInterceptorBase
	c *capture
}

// ExecuteActivity keeps the input of a compared activity type, in the
// order the workflow schedules them.
func (o *outboundCapture) ExecuteActivity(ctx workflow.Context, typ string, args ...any) workflow.Future {
	if o.c.activities[typ] {
		var in any
		if len(args) > 0 {
			in = args[0]
		}
		a, err := o.c.encode(in, nil)
		o.c.mu.Lock()
		id := activityID(typ, o.c.scheduled[typ])
		o.c.scheduled[typ]++
		if err != nil && o.c.err == nil {
			o.c.err = fmt.Errorf("encoding the replayed input of %s: %w", id, err)
		}
		o.c.got[id] = a
		o.c.mu.Unlock()
	}
	return o.Next.ExecuteActivity(ctx, typ, args...)
}

// ExecuteUpdate runs the handler and keeps its answer by update id.
func (i *inbound) ExecuteUpdate(ctx workflow.Context, in *interceptor.UpdateInput) (any, error) {
	out, err := i.Next.ExecuteUpdate(ctx, in)
	id := workflow.GetCurrentUpdateInfo(ctx).ID
	a, cerr := i.c.encode(out, err)
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	if cerr != nil && i.c.err == nil {
		i.c.err = fmt.Errorf("encoding the replayed answer to update %s: %w", id, cerr)
	}
	i.c.got[id] = a
	return out, err
}

// encode is an answer as the recorded ones are read: through the data
// converter, as canonical JSON.
func (c *capture) encode(out any, err error) (answer, error) {
	if err != nil {
		return answer{text: "error: " + c.fc.ErrorToFailure(err).GetMessage()}, nil
	}
	p, perr := c.dc.ToPayload(out)
	if perr != nil {
		return answer{}, perr
	}
	var raw json.RawMessage
	if perr := c.dc.FromPayload(p, &raw); perr != nil {
		return answer{}, perr
	}
	text, v, perr := canonical(raw)
	return answer{text: text, value: v}, perr
}
