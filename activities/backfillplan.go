package activities

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/sluicehq/sluice/planner"
)

// PlanBackfillInput is what a backfill covers: From..To (YYYY-MM-DD, both
// included) over the selected providers and datasets (empty: the whole
// registry).
type PlanBackfillInput struct {
	From      string   `json:"from"`
	To        string   `json:"to"`
	Providers []string `json:"providers,omitempty"`
	Datasets  []string `json:"datasets,omitempty"`
}

// BackfillDataset is one dataset of a backfill plan: its chunk and call
// counts (the chunks themselves are planned again by PlanChunks, in the
// dataset's own workflow, so no history holds the whole plan).
type BackfillDataset struct {
	Dataset  string `json:"dataset"`
	Provider string `json:"provider"`
	Chunks   int    `json:"chunks"`
	Calls    int    `json:"calls"`
}

// PlanBackfillResult is a backfill's plan, as much as its workflow keeps.
type PlanBackfillResult struct {
	From     string            `json:"from"`
	To       string            `json:"to"`
	Datasets []BackfillDataset `json:"datasets"` // in start order (longestFirst)
	Chunks   int               `json:"chunks"`
	Calls    int               `json:"calls"`
	// OneCallPerDay is what one call per dataset per day would cost.
	OneCallPerDay int `json:"one_call_per_day"`
	// Makespan is the planner's predicted makespan at the declared
	// limits (the worker's rate scale applied); ProviderDays the most
	// provider-local days a scope needs.
	Makespan     time.Duration `json:"makespan"`
	ProviderDays int           `json:"provider_days"`
	// Stalled names the scopes whose day's share the reserved demand
	// spends: their chunks wait until the limits change.
	Stalled []string `json:"stalled,omitempty"`
}

func parseRange(from, to string) (time.Time, time.Time, error) {
	f, err := time.Parse(time.DateOnly, from)
	if err != nil {
		return f, f, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("backfill input: from %q is not a date (want YYYY-MM-DD)", from), ErrTypeBadInput, nil)
	}
	t, err := time.Parse(time.DateOnly, to)
	if err != nil {
		return f, t, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("backfill input: to %q is not a date (want YYYY-MM-DD)", to), ErrTypeBadInput, nil)
	}
	if t.Before(f) {
		return f, t, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("backfill input: to %s is before from %s", to, from), ErrTypeBadInput, nil)
	}
	return f, t, nil
}

func (a *Activities) plan(in PlanBackfillInput) (*planner.Plan, error) {
	from, to, err := parseRange(in.From, in.To)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for _, p := range in.Providers {
		if a.cfg.Registry.Provider(p) == nil {
			unknown = append(unknown, "provider "+p)
		}
	}
	for _, d := range in.Datasets {
		if a.cfg.Registry.Dataset(d) == nil {
			unknown = append(unknown, "dataset "+d)
		}
	}
	if len(unknown) > 0 {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("backfill input: not in the registry: %s (list them with `sluice registry list`)", badFilter(unknown)), ErrTypeUnknownDataset, nil)
	}
	p, err := planner.Backfill(a.cfg.Registry, planner.Input{From: from, To: to, Providers: in.Providers, Datasets: in.Datasets,
		Start: time.Now(), RateScale: a.cfg.RateScale})
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadInput, nil)
	}
	return p, nil
}

// PlanBackfill plans a backfill on the worker's registry (planner.Backfill)
// so that the workflow's plan is recorded in its history. Bad dates, an
// unknown provider or dataset, or a dataset that cannot be backfilled fail
// it at once, naming the value.
func (a *Activities) PlanBackfill(_ context.Context, in PlanBackfillInput) (PlanBackfillResult, error) {
	p, err := a.plan(in)
	if err != nil {
		return PlanBackfillResult{}, err
	}
	res := PlanBackfillResult{From: p.From, To: p.To, Chunks: p.Totals.Chunks, Calls: p.Totals.Calls,
		OneCallPerDay: p.Totals.OneCallPerDay, Makespan: p.Totals.Makespan, ProviderDays: p.Totals.ProviderDays}
	idx := map[string]int{}
	for _, c := range p.Chunks {
		i, ok := idx[c.Dataset]
		if !ok {
			i = len(res.Datasets)
			idx[c.Dataset] = i
			res.Datasets = append(res.Datasets, BackfillDataset{Dataset: c.Dataset, Provider: c.Provider})
		}
		res.Datasets[i].Chunks++
		res.Datasets[i].Calls += c.Calls
	}
	res.Datasets = longestFirst(p, res.Datasets)
	for _, s := range p.Scopes {
		if s.Stalled {
			res.Stalled = append(res.Stalled, s.Scope)
		}
	}
	if len(res.Datasets) == 0 {
		return res, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("backfill input: nothing to backfill from %s to %s with providers %v and datasets %v (no selected dataset asks for dates)", in.From, in.To, in.Providers, in.Datasets),
			ErrTypeBadInput, nil)
	}
	return res, nil
}

// longestFirst orders a backfill's datasets for their start (the Backfill
// workflow starts them in this order, at most backfillMaxChildren at
// once): one dataset of each scope in turn, the scopes by the plan's
// predicted makespan, longest first, each scope's datasets in plan order.
// A dataset counts for its scope of the longest makespan. So the scopes
// the run waits for longest start at once, side by side, as the planner
// predicts them, and the short ones fill the slots they leave. In plan
// order (the registry's) the default registry's critical path, kis/key,
// began only as the 80 ECOS datasets before it finished — 30–45 s into a
// run at rate scale 10 on a loaded 2-core machine, where the prediction
// has every scope start at once.
func longestFirst(p *planner.Plan, ds []BackfillDataset) []BackfillDataset {
	makespan := map[string]time.Duration{}
	for _, s := range p.Scopes {
		makespan[s.Scope] = s.Makespan
	}
	scopeOf := map[string]string{}
	for _, c := range p.Chunks {
		for _, s := range c.Scopes {
			cur, ok := scopeOf[c.Dataset]
			if !ok || makespan[s] > makespan[cur] || makespan[s] == makespan[cur] && s < cur {
				scopeOf[c.Dataset] = s
			}
		}
	}
	var scopes []string
	groups := map[string][]BackfillDataset{}
	for _, d := range ds {
		s := scopeOf[d.Dataset]
		if _, ok := groups[s]; !ok {
			scopes = append(scopes, s)
		}
		groups[s] = append(groups[s], d)
	}
	slices.SortStableFunc(scopes, func(a, b string) int { return cmp.Compare(makespan[b], makespan[a]) })
	out := make([]BackfillDataset, 0, len(ds))
	for i := 0; len(out) < len(ds); i++ {
		for _, s := range scopes {
			if i < len(groups[s]) {
				out = append(out, groups[s][i])
			}
		}
	}
	return out
}

// PlanChunksInput asks for one dataset's chunks of a backfill.
type PlanChunksInput struct {
	Dataset string `json:"dataset"`
	From    string `json:"from"`
	To      string `json:"to"`
}

// PlanChunks plans one dataset's chunks of a backfill (planner.Backfill
// for that dataset alone), in date order.
func (a *Activities) PlanChunks(_ context.Context, in PlanChunksInput) ([]BackfillChunk, error) {
	p, err := a.plan(PlanBackfillInput{From: in.From, To: in.To, Datasets: []string{in.Dataset}})
	if err != nil {
		return nil, err
	}
	out := make([]BackfillChunk, 0, len(p.Chunks))
	for _, c := range p.Chunks {
		out = append(out, BackfillChunk{From: c.From, To: c.To, Calls: c.Calls})
	}
	return out, nil
}
