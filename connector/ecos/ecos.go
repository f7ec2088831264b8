// Package ecos is the connector for the Bank of Korea ECOS Open API: the
// StatisticSearch service, whose key is a path segment and whose errors
// come inside HTTP 200 as a RESULT envelope.
package ecos

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

// New returns an ECOS connector.
func New(p *registry.Provider, opts connector.Options) (*Connector, error) {
	return connector.Assemble[Connector](p, opts, connector.Steps{Needs: []string{"stat_code"}, Plan: plan, Probe: probe, Newest: complete})
}

// Connector speaks ECOS: the connector skeleton with ECOS's plan. A probe
// asks for the rows of a recent window sized to the cycle (ProbeFrom), at
// most ProbeRows of them in one call; its answer holds the newest period
// unless list_total_count says rows were left out.
type Connector struct{ connector.Skeleton }

func init() { connector.Register(Spec, connector.FactoryOf(New)) }

// DefaultPageSize is the rows asked per call when the dataset names no
// page_size.
const DefaultPageSize = 1000

// ProbeRows is how many rows a probe asks for: every row of the probe
// window (at most 15 periods of one item), so that the answer, oldest
// first, ends with the newest period.
const ProbeRows = 100

// complete reports whether a probe's answer holds every row of its window:
// list_total_count says none were left out.
func complete(resp *connector.Response) bool { return resp != nil && !resp.More }

// probe asks for the window ProbeFrom sizes to the dataset's cycle.
func probe(b *connector.Base, ds *registry.Dataset) connector.Request {
	today := b.Today()
	from := today.AddDate(0, 0, -14)
	if ds != nil {
		from = ProbeFrom(ds.Request.Cycle, today)
	}
	return connector.Request{Dataset: ds, From: from, To: today, Limit: ProbeRows}
}

// ProbeFrom is the start of the probe window of a cycle ending today (D:
// 14 days, SM: 6 months, M: 12 months, Q: 2 years, S: 3 years, A: 5
// years).
func ProbeFrom(cycle string, today time.Time) time.Time {
	switch cycle {
	case "SM":
		return today.AddDate(0, -6, 0)
	case "M":
		return today.AddDate(0, -12, 0)
	case "Q":
		return today.AddDate(-2, 0, 0)
	case "S":
		return today.AddDate(-3, 0, 0)
	case "A":
		return today.AddDate(-5, 0, 0)
	}
	return today.AddDate(0, 0, -14)
}

// plan asks StatisticSearch for rows (Page-1)*size+1 … Page*size of the
// dataset's statistic between From and To, dates written per cycle.
// Response.Next asks for the next rows while list_total_count lies beyond
// the last row asked (it comes before the rows: the head decides).
func plan(b *connector.Base, call permit.Call, req connector.Request) (connector.Plan, error) {
	u, end, format, err := build(b, req)
	if err != nil {
		return connector.Plan{}, err
	}
	return connector.Plan{Exchange: connector.Exchange{Call: call, URL: u, Format: format,
		Classify: func(h connector.Head) connector.Verdict { return Classify(h, end) }}}, nil
}

// build returns the request URL (key included), the last row asked for
// and the format.
func build(b *connector.Base, req connector.Request) (u string, end int, format string, _ *connector.Error) {
	bad := func(msg string) *connector.Error { return &connector.Error{Class: connector.BadRequest, Message: msg} }
	r := req.Dataset.Request
	from, err := FormatDate(r.Cycle, req.From)
	if err != nil {
		return "", 0, "", bad(err.Error())
	}
	to, _ := FormatDate(r.Cycle, req.To)
	key, err := b.Credential("api_key")
	if err != nil {
		return "", 0, "", connector.AsError(err)
	}
	size := r.PageSize
	if req.Limit > 0 {
		size = req.Limit
	}
	if size <= 0 {
		size = DefaultPageSize
	}
	start := (req.PageOrFirst()-1)*size + 1
	end = start + size - 1
	format = connector.Format(r)
	segs := []string{"api", Service, key, format, "kr", strconv.Itoa(start), strconv.Itoa(end),
		r.StatCode, r.Cycle, from, to}
	items := r.Items
	for len(items) > 0 && strings.TrimSpace(items[len(items)-1]) == "" {
		items = items[:len(items)-1]
	}
	for _, it := range items {
		if strings.TrimSpace(it) == "" {
			it = "?" // ECOS's placeholder for an empty item code
		}
		segs = append(segs, it)
	}
	var path strings.Builder
	for _, s := range segs {
		path.WriteByte('/')
		path.WriteString(url.PathEscape(s))
	}
	return b.URL(path.String(), ""), end, format, nil
}

// FormatDate writes a civil date as the cycle wants it: A 2024, S 2024S1,
// Q 2024Q1, M 202401, SM 202401S1 (days 1–15) or 202401S2, D 20240101.
func FormatDate(cycle string, d time.Time) (string, error) {
	y, m, day := d.Date()
	switch cycle {
	case "A":
		return fmt.Sprintf("%04d", y), nil
	case "S":
		return fmt.Sprintf("%04dS%d", y, (int(m)-1)/6+1), nil
	case "Q":
		return fmt.Sprintf("%04dQ%d", y, (int(m)-1)/3+1), nil
	case "M":
		return fmt.Sprintf("%04d%02d", y, int(m)), nil
	case "SM":
		half := 1
		if day > 15 {
			half = 2
		}
		return fmt.Sprintf("%04d%02dS%d", y, int(m), half), nil
	case "D":
		return fmt.Sprintf("%04d%02d%02d", y, int(m), day), nil
	}
	return "", fmt.Errorf("unknown ECOS cycle %q (expected A, S, Q, M, SM or D)", cycle)
}

// Endpoint is the service's path: the key, the rows and the statistic
// that follow it in a call's path are the call's, not the endpoint's.
func (c *Connector) Endpoint(*registry.Dataset) string { return "/api/" + Service }
