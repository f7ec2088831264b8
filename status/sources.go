package status

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/schedules"
)

// LimiterStates reads a scope limiter's state (*ratelimit.Client does).
type LimiterStates interface {
	State(ctx context.Context, scopeID string) (ratelimit.State, error)
}

// Schedule is one Temporal Schedule as the operator page shows it.
type Schedule struct {
	ID       string      `json:"id"`
	Workflow string      `json:"workflow"`
	Spec     string      `json:"spec"`
	Next     []time.Time `json:"next"`
	Recent   []time.Time `json:"recent,omitempty"`
	Paused   bool        `json:"paused"`
	Note     string      `json:"note,omitempty"`
	// Sluice is true for the schedules Sluice owns (the memo
	// schedules.MemoOwner = schedules.OwnerName).
	Sluice bool `json:"sluice"`
}

// Schedules lists schedules with their next runs.
type Schedules interface {
	Schedules(ctx context.Context) ([]Schedule, error)
}

// Backfill is one running backfill and what its progress query said.
type Backfill struct {
	ID      string    `json:"id"`
	RunID   string    `json:"run_id"`
	Started time.Time `json:"started"`
	From    string    `json:"from,omitempty"`
	To      string    `json:"to,omitempty"`
	State   string    `json:"state,omitempty"`
	// Percent is the share of chunks done, 0 to 100; negative when the
	// progress query did not say.
	Percent float64 `json:"percent"`
	// ETA is the progress query's estimate, or one made from Percent and
	// Started; zero when neither is known.
	ETA      time.Time `json:"eta,omitzero"`
	ETASaid  bool      `json:"eta_from_workflow"`
	Message  string    `json:"message,omitempty"`
	Chunks   string    `json:"chunks,omitempty"`
	Provider []string  `json:"providers,omitempty"`
	// Queried is false when the progress query failed or its answer could
	// not be decoded (the row then shows what the listing said).
	Queried bool `json:"queried"`
}

// Backfills lists the running backfills with their progress.
type Backfills interface {
	Backfills(ctx context.Context) ([]Backfill, error)
}

// Manifests reports the chunk statuses backfill manifests record (failed
// and no-data chunks), for the coverage map.
type Manifests interface {
	Chunks(ctx context.Context) ([]ChunkStatus, error)
}

// BackfillWorkflowType and BackfillProgressQuery name the backfill
// workflow and its progress query.
const (
	BackfillWorkflowType  = "Backfill"
	BackfillProgressQuery = "progress"
)

// maxListed bounds what one listing reads from Temporal.
const maxListed = 500

// Temporal reads schedules and running backfills from a Temporal
// namespace.
type Temporal struct {
	Client    client.Client
	Namespace string
}

// Schedules lists every schedule of the namespace (at most 500), Sluice's
// first, each with its next action times.
func (t Temporal) Schedules(ctx context.Context) ([]Schedule, error) {
	it, err := t.Client.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 100})
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	var out []Schedule
	for it.HasNext() && len(out) < maxListed {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("listing schedules: %w", err)
		}
		s := Schedule{ID: e.ID, Workflow: e.WorkflowType.Name, Spec: describeSpec(e.Spec), Next: e.NextActionTimes, Paused: e.Paused, Note: e.Note,
			Sluice: memoString(e.Memo, schedules.MemoOwner) == schedules.OwnerName}
		for _, a := range e.RecentActions {
			s.Recent = append(s.Recent, a.ActualTime)
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Sluice != out[j].Sluice {
			return out[i].Sluice
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func memoString(m *commonpb.Memo, key string) string {
	p := m.GetFields()[key]
	if p == nil {
		return ""
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
		return ""
	}
	return s
}

func describeSpec(s *client.ScheduleSpec) string {
	if s == nil {
		return ""
	}
	var parts []string
	parts = append(parts, s.CronExpressions...)
	for _, iv := range s.Intervals {
		parts = append(parts, "every "+iv.Every.String())
	}
	for _, c := range s.Calendars {
		parts = append(parts, describeCalendar(c))
	}
	if s.TimeZoneName != "" {
		parts = append(parts, "in "+s.TimeZoneName)
	}
	return strings.Join(parts, "; ")
}

// describeCalendar writes a calendar spec the way cron would (minute
// hour day-of-month month day-of-week; a field covering its whole range
// is *), which is how the server returns a cron expression.
func describeCalendar(c client.ScheduleCalendarSpec) string {
	field := func(rs []client.ScheduleRange, lo, hi int) string {
		if len(rs) == 0 {
			return "*"
		}
		var out []string
		for _, r := range rs {
			end := max(r.End, r.Start)
			switch {
			case r.Start == lo && end == hi && r.Step <= 1:
				out = append(out, "*")
			case end == r.Start:
				out = append(out, fmt.Sprint(r.Start))
			default:
				v := fmt.Sprintf("%d-%d", r.Start, end)
				if r.Step > 1 {
					v += fmt.Sprintf("/%d", r.Step)
				}
				out = append(out, v)
			}
		}
		return strings.Join(out, ",")
	}
	s := strings.Join([]string{field(c.Minute, 0, 59), field(c.Hour, 0, 23), field(c.DayOfMonth, 1, 31), field(c.Month, 1, 12), field(c.DayOfWeek, 0, 6)}, " ")
	if c.Comment != "" {
		s += " (" + clipText(c.Comment, 80) + ")"
	}
	return s
}

// Backfills lists the running workflows of type Backfill (at most 500)
// and asks each its progress query, decoding what it can.
func (t Temporal) Backfills(ctx context.Context) ([]Backfill, error) {
	var out []Backfill
	var token []byte
	for len(out) < maxListed {
		resp, err := t.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: t.Namespace, PageSize: 100, NextPageToken: token,
			Query: fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", BackfillWorkflowType),
		})
		if err != nil {
			return nil, fmt.Errorf("listing running backfills: %w", err)
		}
		start := len(out)
		for _, e := range resp.Executions {
			b := Backfill{ID: e.GetExecution().GetWorkflowId(), RunID: e.GetExecution().GetRunId(), Percent: -1}
			if st := e.GetStartTime(); st != nil {
				b.Started = st.AsTime()
			}
			out = append(out, b)
		}
		// Ask each its progress, a few at a time, each bounded.
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i := start; i < len(out); i++ {
			wg.Add(1)
			go func(b *Backfill) {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				v, err := t.Client.QueryWorkflow(qctx, b.ID, b.RunID, BackfillProgressQuery)
				if err != nil {
					return
				}
				var raw json.RawMessage
				if v.Get(&raw) == nil {
					b.Queried = decodeProgress(raw, b)
				}
			}(&out[i])
		}
		wg.Wait()
		token = resp.NextPageToken
		if len(token) == 0 {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}

// progressDoc is the part of a backfill's progress answer the page reads;
// every field is optional.
type progressDoc struct {
	From      string          `json:"from"`
	To        string          `json:"to"`
	State     string          `json:"state"`
	Percent   *float64        `json:"percent"`
	ETA       time.Time       `json:"eta"`
	Message   string          `json:"message"`
	Started   time.Time       `json:"started"`
	Counts    json.RawMessage `json:"counts"`
	Providers []struct {
		Provider string `json:"provider"`
		State    string `json:"state"`
	} `json:"providers"`
}

// decodeProgress fills b from a progress answer and reports whether it
// was a JSON object.
func decodeProgress(raw []byte, b *Backfill) bool {
	var p progressDoc
	if err := json.Unmarshal(raw, &p); err != nil {
		return false
	}
	b.From, b.To, b.State, b.Message = p.From, p.To, p.State, clipText(p.Message, 300)
	if !p.Started.IsZero() {
		b.Started = p.Started
	}
	if p.Percent != nil && *p.Percent >= 0 && *p.Percent <= 100 {
		b.Percent = *p.Percent
	}
	if !p.ETA.IsZero() {
		b.ETA, b.ETASaid = p.ETA, true
	}
	if len(p.Counts) > 0 && len(p.Counts) < 2000 {
		var counts map[string]any
		if json.Unmarshal(p.Counts, &counts) == nil {
			var keys []string
			for k, v := range counts {
				if n, ok := v.(float64); ok {
					keys = append(keys, fmt.Sprintf("%s %g", k, n))
				}
			}
			sort.Strings(keys)
			b.Chunks = strings.Join(keys, ", ")
		}
	}
	for _, pp := range p.Providers {
		if pp.Provider != "" {
			s := pp.Provider
			if pp.State != "" {
				s += " (" + pp.State + ")"
			}
			b.Provider = append(b.Provider, clipText(s, 80))
		}
	}
	return true
}

// estimate fills in an ETA from the share done and the time spent when the
// workflow gave none: done at the same pace.
func (b *Backfill) estimate(now time.Time) {
	if !b.ETA.IsZero() || b.Percent <= 0 || b.Percent >= 100 || b.Started.IsZero() || !now.After(b.Started) {
		return
	}
	spent := now.Sub(b.Started)
	b.ETA = now.Add(time.Duration(float64(spent) * (100 - b.Percent) / b.Percent)).Truncate(time.Second)
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
