// Package fred is the connector for FRED (Federal Reserve Bank of St.
// Louis): series observations with the key in the query and errors carried
// by the HTTP status and an error_code/error_message body.
package fred

import (
	"strconv"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

// New returns a FRED connector.
func New(p *registry.Provider, opts connector.Options) (*Connector, error) {
	return connector.Assemble[Connector](p, opts, connector.Steps{Needs: []string{"series_id"}, Plan: plan,
		Probe: connector.LastDays(ProbeDays, 1), Newest: connector.HoldsNewest})
}

// Connector speaks FRED: the connector skeleton with FRED's plan. A probe
// asks for the newest observation of the last ProbeDays days (limit=1,
// sort_order=desc), which holds the series' newest period.
type Connector struct{ connector.Skeleton }

func init() { connector.Register(Spec, connector.FactoryOf(New)) }

// ObservationsPath is the series observations endpoint.
const ObservationsPath = "/fred/series/observations"

// maxLimit is FRED's largest page (and its default).
const maxLimit = 100000

// ProbeDays is the probe window: wide enough that monthly and quarterly
// series have an observation in it; the probe asks for one row.
const ProbeDays = 400

// plan asks for the series' observations from From to To
// (observation_start/observation_end, YYYY-MM-DD). Limit sets limit;
// Page > 1 sets offset = (Page-1) × limit; Response.Next asks for the
// next offset while count lies beyond the last row asked (count comes
// before the observations: the head decides). A probe asks newest first.
func plan(b *connector.Base, call permit.Call, req connector.Request) (connector.Plan, error) {
	r := req.Dataset.Request
	format := connector.Format(r)
	key, err := b.QueryKey("api_key", "api_key")
	if err != nil {
		return connector.Plan{}, err
	}
	from, to := connector.CivilDate(req.From), connector.CivilDate(req.To)
	q := []registry.Param{
		{Name: "series_id", Value: r.SeriesID},
		key,
		{Name: "file_type", Value: format},
		{Name: "observation_start", Value: from.Format("2006-01-02")},
		{Name: "observation_end", Value: to.Format("2006-01-02")},
	}
	for _, p := range r.ExpandParams(from, to) {
		if !connector.HasParam(q, p.Name) {
			q = append(q, p)
		}
	}
	// A limit the dataset declares is its page size: later pages' offsets
	// count in it.
	limit := maxLimit
	if v, ok := r.Param("limit"); ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= maxLimit {
			limit = n
		}
	}
	if req.Limit > 0 {
		limit = min(req.Limit, maxLimit)
		q = append(q, registry.Param{Name: "limit", Value: strconv.Itoa(limit)})
	}
	offset := (req.PageOrFirst() - 1) * limit
	if offset > 0 {
		q = append(q, registry.Param{Name: "offset", Value: strconv.Itoa(offset)})
	}
	if call.Probe {
		q = append(q, registry.Param{Name: "sort_order", Value: "desc"})
	}
	return connector.Plan{Exchange: connector.Exchange{Call: call, URL: b.URL(ObservationsPath, connector.EncodeQuery(q)),
		Format: format, Classify: func(h connector.Head) connector.Verdict { return Classify(h, offset+limit) }}}, nil
}

// Endpoint is the observations endpoint every dataset asks.
func (c *Connector) Endpoint(*registry.Dataset) string { return ObservationsPath }
