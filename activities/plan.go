package activities

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
)

// PlanInput filters the registry's datasets for a batch. Empty filters
// select every dataset that has a request.
type PlanInput struct {
	Providers []string `json:"providers,omitempty"`
	Datasets  []string `json:"datasets,omitempty"`
}

// PlanItem is one dataset to ingest.
type PlanItem struct {
	Dataset  string `json:"dataset"`
	Provider string `json:"provider"`
}

// Plan resolves a batch's filters against the registry this worker runs
// with, so that the workflow's choice is recorded in its history. An
// unknown provider or dataset fails the batch at once, naming it.
func (a *Activities) Plan(_ context.Context, in PlanInput) ([]PlanItem, error) {
	reg := a.cfg.Registry
	var unknown []string
	for _, p := range in.Providers {
		if reg.Provider(p) == nil {
			unknown = append(unknown, "provider "+p)
		}
	}
	for _, d := range in.Datasets {
		if reg.Dataset(d) == nil {
			unknown = append(unknown, "dataset "+d)
		}
	}
	if len(unknown) > 0 {
		var known []string
		for _, p := range reg.Providers {
			known = append(known, p.ID)
		}
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("not in the registry: %s (providers: %s; list datasets with `sluice registry list`)",
				strings.Join(unknown, ", "), strings.Join(known, ", ")), ErrTypeUnknownDataset, nil)
	}
	var out []PlanItem
	for _, d := range reg.Datasets {
		if !d.Request.Declared() {
			continue
		}
		if len(in.Providers) > 0 && !slices.Contains(in.Providers, d.Provider) {
			continue
		}
		if len(in.Datasets) > 0 && !slices.Contains(in.Datasets, d.ID) {
			continue
		}
		out = append(out, PlanItem{Dataset: d.ID, Provider: d.Provider})
	}
	return out, nil
}
