// Package datago is the connector for 공공데이터포털 (data.go.kr) services:
// the decoding serviceKey encoded exactly once, pageNo/numOfRows paging,
// and the XML gateway envelope that reports errors with HTTP 200 even when
// JSON was asked for.
package datago

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

// New returns a data.go.kr connector.
func New(p *registry.Provider, opts connector.Options) (*Connector, error) {
	return connector.Assemble[Connector](p, opts, connector.Steps{Needs: []string{"path"}, Plan: plan, Probe: connector.LastDays(ProbeDays, 1)})
}

// Connector speaks data.go.kr: the connector skeleton with data.go.kr's
// plan. A probe asks for one row (numOfRows=1) of the last ProbeDays days.
// That row is not known to be the newest (the services do not promise an
// order, and one that takes only {from} is asked for the window's first
// day), so the answer does not claim to hold the newest period.
type Connector struct{ connector.Skeleton }

func init() { connector.Register(Spec, connector.FactoryOf(New)) }

// DefaultPageSize is numOfRows when the dataset names no page_size.
const DefaultPageSize = 1000

// ProbeDays is the probe window.
const ProbeDays = 14

// plan asks the dataset's service path with serviceKey (the provider's
// auth param; the decoding key, encoded once), the dataset's parameters
// ({from}/{to} filled in, including its JSON switch such as _type=json or
// resultType=json), and pageNo/numOfRows unless the dataset sets them. A
// pageNo the dataset sets is its first page: Page n asks pageNo + n - 1.
// Response.Next asks for the next page while totalCount (read at the end
// of the body) lies beyond pageNo × numOfRows.
func plan(b *connector.Base, call permit.Call, req connector.Request) (connector.Plan, error) {
	r := req.Dataset.Request
	key, err := b.QueryKey("service_key", "serviceKey")
	if err != nil {
		return connector.Plan{}, err
	}
	key.Value = decodingKey(b, key.Value)
	size := r.PageSize
	if req.Limit > 0 {
		size = req.Limit
	}
	if size <= 0 {
		size = DefaultPageSize
	}
	q := []registry.Param{key}
	params := r.ExpandParams(connector.CivilDate(req.From), connector.CivilDate(req.To))
	// A pageNo the dataset declares is its first page; Page counts from it.
	first := 1
	if v, ok := r.Param("pageNo"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return connector.Plan{}, &connector.Error{Class: connector.BadRequest,
				Message: fmt.Sprintf("request.params.pageNo %q is not a page number (1 or more)", v)}
		}
		first = n
	}
	pageNo := strconv.Itoa(first + req.PageOrFirst() - 1)
	if !connector.HasParam(params, "pageNo") {
		q = append(q, registry.Param{Name: "pageNo", Value: pageNo})
	}
	if !connector.HasParam(params, "numOfRows") || req.Limit > 0 {
		q = append(q, registry.Param{Name: "numOfRows", Value: strconv.Itoa(size)})
	}
	for _, p := range params {
		switch {
		case p.Name == "numOfRows" && req.Limit > 0:
			continue
		case p.Name == "numOfRows":
			if n, err := strconv.Atoi(strings.TrimSpace(p.Value)); err == nil && n > 0 {
				size = n
			}
		case p.Name == "pageNo":
			p.Value = pageNo
		}
		q = append(q, p)
	}
	format := connector.Format(r)
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	x := connector.Exchange{Call: call, Method: method,
		URL:    b.URL((&url.URL{Path: r.Path}).EscapedPath(), connector.EncodeQuery(q)),
		Format: format, Classify: Classify}
	asked, rows := int64(first+req.PageOrFirst()-1), int64(size)
	return connector.Plan{Exchange: x, Pages: func(resp *connector.Response) { pages(b, call, req, resp, asked, rows) }}, nil
}

// pages sets the Next of an answer: more pages follow while totalCount
// lies beyond pageNo × numOfRows. totalCount usually comes after the
// items, so the decision waits for the end of the body (its head and its
// last connector.TailSize bytes are kept). An answer that names no
// totalCount fails Next: whether rows are missing cannot be told.
func pages(b *connector.Base, call permit.Call, req connector.Request, resp *connector.Response, askedPage, askedRows int64) {
	tail := &connector.Tail{}
	watch := connector.Watch(resp, tail)
	resp.Next = func() (connector.Request, bool, error) {
		if !watch.Done() {
			return connector.Request{}, false, connector.Unread()
		}
		total, pageNo, rows, ok := pageCounts(watch.Head(), tail.Bytes())
		if !ok {
			return connector.Request{}, false, b.Fail(call, resp.Status, &connector.Error{Class: connector.BadRequest, Code: "paging",
				Message: "the answer names no totalCount: cannot tell whether further pages follow"})
		}
		if pageNo <= 0 {
			pageNo = askedPage
		}
		if rows <= 0 {
			rows = askedRows
		}
		if total <= pageNo*rows {
			return connector.Request{}, false, nil
		}
		next := req
		next.Page = req.PageOrFirst() + 1
		return next, true, nil
	}
}

// decodingKey returns the decoding key. The portal issues two spellings of
// one key: the decoding key (base64: letters, digits, + / =) and the
// encoding key (the same, percent-encoded). A key holding '%' is the
// encoding key; it is decoded once here so that it is encoded exactly once
// on the wire, never twice.
func decodingKey(b *connector.Base, key string) string {
	if !strings.Contains(key, "%") {
		return key
	}
	dec, err := url.QueryUnescape(key)
	if err != nil {
		return key
	}
	b.Secrets().Add(dec)
	b.Logger().Warn("the data.go.kr service key looks percent-encoded (the encoding key); using its decoded form")
	return dec
}
