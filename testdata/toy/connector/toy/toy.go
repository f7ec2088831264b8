// Package toy is the connector of a throwaway sixth provider, "toy", kept
// in testdata: it is what connector/<p>/<p>.go holds for a real provider
// (docs/providers.md, Adding a provider) — the connector on
// connector.Base and, beside it, its wire spec, registered from init.
// Only tests link it.
package toy

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/connector"
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

// ProbeDays is how far back a probe looks for the newest row.
const ProbeDays = 31

type toyConnector struct{ base *connector.Base }

// Fetch asks for one page of a dataset's rows in the request's range.
func (c *toyConnector) Fetch(ctx context.Context, req connector.Request) (*connector.Response, error) {
	return c.fetch(ctx, req, false)
}

// Probe asks for the newest row of the last ProbeDays days: rows come
// newest first, so the one row it gets is the newest the toy publishes.
func (c *toyConnector) Probe(ctx context.Context, ds *registry.Dataset) (connector.ProbeAnswer, error) {
	today := c.base.Today()
	resp, err := c.fetch(ctx, connector.Request{Dataset: ds,
		From: today.AddDate(0, 0, -ProbeDays), To: today, Limit: 1}, true)
	return connector.ReadProbe(resp, err, true)
}

func (c *toyConnector) fetch(ctx context.Context, req connector.Request, probe bool) (*connector.Response, error) {
	call, ds, derr := c.base.Dataset(req, probe)
	if derr != nil {
		return nil, derr
	}
	key, err := c.base.Credential("api_key")
	if err != nil {
		return nil, c.base.Fail(call, 0, connector.AsError(err))
	}
	size := ds.Request.PageSize
	if size <= 0 {
		size = Spec.Paging.DefaultRows
	}
	if req.Limit > 0 {
		size = req.Limit
	}
	q := append(ds.Request.ExpandParams(connector.CivilDate(req.From), connector.CivilDate(req.To)),
		registry.Param{Name: "key", Value: key}, registry.Param{Name: "page", Value: strconv.Itoa(req.PageOrFirst())},
		registry.Param{Name: "size", Value: strconv.Itoa(size)})
	last := req.PageOrFirst() * size
	return c.base.Do(ctx, connector.Exchange{Call: call, URL: c.base.URL(ds.Request.Path, connector.EncodeQuery(q)), Format: "json",
		Classify: func(h connector.Head) connector.Verdict {
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
		}})
}

func init() {
	connector.Register(Spec, func(p *registry.Provider, opts connector.Options) (connector.Connector, error) {
		b, err := connector.NewBase(p, opts)
		if err != nil {
			return nil, err
		}
		return &toyConnector{base: b}, nil
	})
}
