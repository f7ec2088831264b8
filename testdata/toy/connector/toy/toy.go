// Package toy is the connector of a throwaway sixth provider, "toy", kept
// in testdata: it is what connector/<p>/<p>.go holds for a real provider
// (docs/providers.md, Adding a provider) — the connector skeleton filled
// in with its steps and, beside it, its wire spec, registered from init.
// Only tests link it.
package toy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/wire"
)

// Spec is the toy's wire: a JSON list of {day, v} rows under data.rows,
// newest first, paged by page number, a date range in the dataset's
// params.
var Spec = wire.Spec{
	Connector: "toy",
	Fields:    wire.Fields{Required: []string{"path"}, Allowed: []string{"path", "params", "page_size"}},
	Paging:    wire.Paging{Style: wire.PageNumber, Controls: []string{"page", "size"}, DefaultRows: 10, MaxRows: 20, Sizable: true},
	Dates:     wire.Dates{InParams: true, Cycles: []wire.Cycle{{Unit: wire.Day, Format: wire.ISODate}}},
	Rows:      wire.Rows{JSON: "data.rows", Period: "day", PeriodFormat: wire.ISODate, Values: []string{"v"}, NewestFirst: true},
	Coverage:  wire.Coverage{Align: wire.Month},
}

// ProbeDays is how far back a probe looks for the newest row; it asks
// for one row, and rows come newest first.
const ProbeDays = 31

// New returns a toy connector.
func New(p *registry.Provider, opts connector.Options) (*Connector, error) {
	return connector.Assemble[Connector](p, opts, connector.Steps{Needs: []string{"path"}, Plan: plan,
		Probe: connector.LastDays(ProbeDays, 1), Newest: connector.HoldsNewest})
}

// Connector speaks the toy's wire: the connector skeleton with its plan.
type Connector struct{ connector.Skeleton }

func init() { connector.Register(Spec, connector.FactoryOf(New)) }

// plan asks for one page of the dataset's rows from From to To (its
// params' {from}/{to}), page and size in the query; the answer's total
// says whether more pages follow.
func plan(b *connector.Base, call permit.Call, req connector.Request) (connector.Plan, error) {
	r := req.Dataset.Request
	key, err := b.QueryKey("api_key", "key")
	if err != nil {
		return connector.Plan{}, err
	}
	size := r.PageSize
	if size <= 0 {
		size = Spec.Paging.DefaultRows
	}
	if req.Limit > 0 {
		size = req.Limit
	}
	q := append(r.ExpandParams(connector.CivilDate(req.From), connector.CivilDate(req.To)),
		key, registry.Param{Name: "page", Value: strconv.Itoa(req.PageOrFirst())},
		registry.Param{Name: "size", Value: strconv.Itoa(size)})
	last := req.PageOrFirst() * size
	return connector.Plan{Exchange: connector.Exchange{Call: call, URL: b.URL(r.Path, connector.EncodeQuery(q)), Format: "json",
		Classify: func(h connector.Head) connector.Verdict { return classify(h, last) }}}, nil
}

// classify reads the head of an answer: an HTTP error by its status, a
// body that is not the toy's envelope as transient, no rows as NoData,
// more pages while the total lies beyond the last row asked.
func classify(h connector.Head, last int) connector.Verdict {
	if h.Status != http.StatusOK {
		return connector.StatusVerdict(h, time.Second)
	}
	var a struct{ Data struct{ Total int } }
	if json.Unmarshal(h.Bytes, &a) != nil && h.Complete {
		return connector.Fail(connector.Transient, "", "not a toy answer: "+connector.Snippet(h.Bytes, 80))
	}
	if a.Data.Total == 0 && h.Complete {
		return connector.Fail(connector.NoData, "", "no rows in the range")
	}
	return connector.Verdict{More: a.Data.Total > last}
}
