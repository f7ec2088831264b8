package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
)

// RefetchName is the registered name of the refetch workflow.
const RefetchName = "Refetch"

// MaxRefetchItems bounds one Refetch: Temporal advises at most 500
// pending activities per workflow. Callers start several for more.
const MaxRefetchItems = 500

// RefetchInput lists the objects to fetch again, each as the Ingest it
// takes: a dataset and its logical date or range. `sluice lake verify
// --repair` starts one for the objects that fail verification.
type RefetchInput struct {
	Items []activities.IngestInput `json:"items"`
}

// RefetchResult is every item's outcome, in input order.
type RefetchResult struct {
	Results   []DatasetResult `json:"results"`
	Succeeded int             `json:"succeeded"`
	NoData    int             `json:"no_data"`
	Failed    int             `json:"failed"`
}

// Refetch runs the Ingest activity for each item, with the daily
// ingest's options: every call waits for its permits like any other, and
// the sink rewrites an object whose stored bytes are damaged (unchanged,
// verified bytes are skipped). It completes even when items fail, naming
// them.
func Refetch(ctx workflow.Context, in RefetchInput) (RefetchResult, error) {
	var res RefetchResult
	if len(in.Items) == 0 || len(in.Items) > MaxRefetchItems {
		return res, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("refetch: %d items; want 1 to %d", len(in.Items), MaxRefetchItems), activities.ErrTypeBadInput, nil)
	}
	var a *activities.Activities
	actCtx := workflow.WithActivityOptions(ctx, IngestActivityOptions)
	futures := make([]workflow.Future, len(in.Items))
	for i, item := range in.Items {
		futures[i] = workflow.ExecuteActivity(actCtx, a.Ingest, item)
	}
	res.Results = make([]DatasetResult, len(in.Items))
	for i, f := range futures {
		r := DatasetResult{Dataset: in.Items[i].Dataset}
		var out activities.IngestResult
		err := f.Get(ctx, &out)
		if err == nil {
			r.Provider = out.Provider
		}
		r.record(out, err, &res.Succeeded, &res.NoData, &res.Failed)
		r.Finished = workflow.Now(ctx)
		res.Results[i] = r
	}
	return res, nil
}
