package activities

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/lineage"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

// The kinds of ingest a lineage event names (lineage.IngestFacet.Kind).
const (
	lineageDaily    = "daily"
	lineageBackfill = "backfill"
	lineageRange    = "range"
)

// lineageRun describes an Ingest attempt for its lineage events: the run
// id of the activity attempt (lineage.RunID; a random UUIDv7 outside an
// activity), the dataset's ingest, the provider endpoint its calls go to
// (the base URL the connector uses, and the endpoint's path: never a
// request URL) and the dataset's prefix in the lake.
func (a *Activities) lineageRun(ctx context.Context, ds *registry.Dataset, in IngestInput, plan fetchPlan, conn connector.Connector) lineage.Ingest {
	f := lineage.IngestFacet{
		Dataset: ds.ID, Provider: ds.Provider, Kind: lineageRange,
		LogicalFrom: dateOf(plan.keyFrom), LogicalTo: dateOf(plan.keyTo), Attempt: attempt(ctx),
	}
	switch {
	case in.LookBack:
		f.Kind = lineageDaily
	case in.Priority == permit.PriorityBackfill:
		f.Kind = lineageBackfill
	}
	if !plan.window.IsZero() {
		f.WindowFrom, f.WindowTo = dateOf(plan.window.From), dateOf(plan.window.To)
	}
	var id uuid.UUID
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		f.WorkflowID, f.WorkflowRun, f.ActivityID = info.WorkflowExecution.ID, info.WorkflowExecution.RunID, info.ActivityID
		id = lineage.RunID(f.WorkflowID, f.WorkflowRun, f.ActivityID, info.Attempt)
	} else {
		id = uuid.Must(uuid.NewV7())
	}
	return lineage.Ingest{
		RunID:     id,
		Namespace: a.cfg.LineageNamespace,
		Facet:     f,
		Source:    lineage.Endpoint(a.baseURL(conn, ds.Provider), connector.EndpointOf(conn, ds)),
		Lake:      a.cfg.LineageLake.Output("provider=" + ds.Provider + "/job=" + ds.ID + "/"),
	}
}

// baseURL is the base URL a provider's calls go to: the connector's, else
// the override, else the registry's.
func (a *Activities) baseURL(conn connector.Connector, provider string) string {
	if b, ok := conn.(interface{ Base() *connector.Base }); ok && b.Base() != nil {
		return b.Base().BaseURL()
	}
	if u := a.cfg.BaseURLs[provider]; u != "" {
		return u
	}
	if u := a.cfg.BaseURLs["*"]; u != "" {
		return u
	}
	if p := a.cfg.Registry.Provider(provider); p != nil {
		return p.BaseURL
	}
	return ""
}

func dateOf(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.DateOnly)
}
