package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/internal/heartbeat"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/wire"
)

// fetched is what fetchPages did.
type fetched struct {
	put       sink.Result
	noData    bool   // every request's page 1 answered NoData: nothing stored
	more      bool   // further pages announced, declined (paging: first_page)
	sourceURL string // the first page's redacted URL
	// rows counts the records of every page written, as each streamed
	// through (wire.Counter); nil when a page's rows could not be counted
	// for sure (its answer held no place for rows where the dataset's
	// wire facts put them). 0 with noData.
	rows *int64
}

// keyError is a lake key that cannot be built: bad input, not a failure.
type keyError struct{ err error }

// Error returns the key error's message.
func (e keyError) Error() string { return e.err.Error() }

// fetchPlan is what one Ingest asks for: the dates its object is filed
// under and the requests whose pages it holds.
type fetchPlan struct {
	// keyFrom and keyTo name the object (sink.KeySpec): a daily run's
	// logical date, or a range.
	keyFrom, keyTo time.Time
	// window is the span of dates the requests ask for, recorded with
	// the object; zero for a request that names no dates.
	window registry.Dates
	// requests are asked in order, their pages written back to back into
	// the one object: one request for a window, or one per period for a
	// dataset that asks one period a call.
	requests []registry.Dates
	// priority is the class the calls wait in at the scope limiter.
	priority permit.Priority
	// observe, when set, takes the first answer's status, latency and
	// first bytes: the ingest's passive observation for the watch.
	observe *passive
}

// fetchPages fetches the pages of a plan's requests, page 1 of each first,
// each page a connector call of its own (so each waits for its own permit
// at the Gate), and writes them in order as one object: each page is
// streamed into the lake as it arrives, never buffered. A request stops
// when the provider's answer says no page follows (Response.Next), when a
// page after the first answers NoData (nothing beyond the previous page),
// or after page 1 when the dataset declares paging: first_page; a request
// whose page 1 answers NoData (a market holiday in a window asked day by
// day) adds nothing, and the plan is NoData when every request is. A
// provider still announcing pages after maxPages fails the ingest
// (BadRequest, code too_many_pages); a next page that repeats the previous
// request, or the previous page's bytes, fails it as Transient
// (paging_stuck): the cursor did not advance. The pages of one object
// hold at most the dataset's bounds.max_object_mib of decoded bytes
// together (each page is bounded by the connector, bounds.max_page_mib): a
// provider sending more fails the ingest as BadRequest, code too_large,
// as soon as the sum passes the bound. Nothing is stored unless every
// page arrived. Each page's records are counted as it streams through
// (wire.Counter, under the dataset's row facts): no page is read twice.
func (a *Activities) fetchPages(ctx context.Context, conn connector.Connector, ds *registry.Dataset, plan fetchPlan, maxPages int) (fetched, error) {
	var out fetched
	var w sink.Writer
	defer func() {
		if w != nil {
			w.Abort() // no-op after Commit
		}
	}()
	fail := func(class connector.Class, code, msg string) error {
		return &connector.Error{Class: class, Provider: ds.Provider, Dataset: ds.ID, Code: code, Message: msg}
	}
	var ext, contentType string
	var fetchedAt time.Time
	total := 0 // pages written, over every request
	rows, counted := int64(0), ds.Wire != nil
	size := &objectSize{max: ds.Bounds.OrDefault().ObjectBytes}
	for _, dates := range plan.requests {
		req := connector.Request{Dataset: ds, From: dates.From, To: dates.To, Priority: plan.priority}
		if dates.IsZero() {
			req.From, req.To = plan.keyFrom, plan.keyTo
		}
		prevSHA := ""
		for page := 1; ; page++ {
			resp, err := conn.Fetch(ctx, req)
			if err != nil {
				if c, ok := connector.ClassOf(err); ok && c == connector.NoData {
					break // nothing (page 1), or nothing beyond the previous page
				}
				return out, err
			}
			if w == nil {
				key, kerr := sink.Key(sink.KeySpec{Provider: ds.Provider, Dataset: ds.ID, From: plan.keyFrom, To: plan.keyTo, Ext: resp.Ext})
				if kerr != nil {
					resp.Body.Close()
					return out, keyError{kerr}
				}
				if w, err = a.cfg.Sink.Create(ctx, key); err != nil {
					resp.Body.Close()
					return out, fmt.Errorf("streaming %s into %s: %w", ds.ID, key, err)
				}
				ext, contentType, out.sourceURL, fetchedAt = resp.Ext, resp.ContentType, resp.URL, time.Now().UTC()
			} else if resp.Ext != ext {
				resp.Body.Close()
				return out, fail(connector.Transient, "paging", fmt.Sprintf("page %d is %s where page 1 was %s", total+1, resp.Ext, ext))
			}
			var rc *wire.Counter
			var src io.Reader = resp.Body
			if counted {
				rc = wire.NewCounter(ds.Wire.Rows)
				src = io.TeeReader(src, rc)
			}
			body := heartbeat.Reader(ctx, plan.observe.firstAnswer(resp, &objectReader{r: src, size: size}))
			p, err := w.WritePage(body)
			resp.Body.Close()
			if size.over {
				return out, fail(connector.BadRequest, connector.CodeTooLarge,
					fmt.Sprintf("the object is larger than %s, the most one object may hold (bounds.max_object_mib; counted decoded), at page %d: split the range, or raise the bound if the range is right",
						connector.FormatBytes(size.max), total+1))
			}
			if err != nil {
				return out, fmt.Errorf("streaming %s page %d: %w", ds.ID, total+1, err)
			}
			total++
			if rc != nil {
				n, ok := rc.Count()
				rows, counted = rows+int64(n), ok
			}
			if page > 1 && p.RawSHA256 == prevSHA {
				return out, fail(connector.Transient, "paging_stuck",
					fmt.Sprintf("page %d repeats page %d byte for byte: the provider's cursor did not advance", page, page-1))
			}
			prevSHA = p.RawSHA256
			next, more, err := connector.NextPage(resp)
			if err != nil {
				return out, fmt.Errorf("paging %s after page %d: %w", ds.ID, page, err)
			}
			if !more {
				break
			}
			if ds.Request.FirstPageOnly() {
				out.more = true
				break
			}
			if next.PageOrFirst() == req.PageOrFirst() && next.Cursor == req.Cursor {
				return out, fail(connector.Transient, "paging_stuck",
					fmt.Sprintf("the provider announced a page after page %d but the next request repeats it: the cursor did not advance", page))
			}
			if page >= maxPages {
				return out, fail(connector.BadRequest, "too_many_pages",
					fmt.Sprintf("the provider still announces more pages after %d, the most one ingest follows (defaults.max_pages_per_call, or the ingest's max_pages): split the range, or raise the bound if the range is right", maxPages))
			}
			req = next
		}
	}
	if counted {
		out.rows = &rows
	}
	if w == nil {
		out.noData = true
		zero := int64(0)
		out.rows = &zero // no page held a row: none, whatever the facts
		return out, nil
	}
	meta := sink.Meta{ContentType: contentType, SourceURL: out.sourceURL, FetchedAt: fetchedAt, Window: sink.Window{From: plan.window.From, To: plan.window.To}}
	put, err := w.Commit(meta)
	out.put = put
	if err != nil {
		return out, fmt.Errorf("streaming %s into %s: %w", ds.ID, put.Key, err)
	}
	return out, nil
}

// objectSize counts the decoded bytes of an object's pages against its
// bound (registry.Bounds.ObjectBytes).
type objectSize struct {
	n, max int64
	over   bool
}

// errObjectTooLarge fails the read of a page that takes its object past
// its bound; fetchPages reports it classified.
var errObjectTooLarge = errors.New("object larger than its bound")

// objectReader reads one page of an object, counting it in the object's
// size, and fails once the object passes its bound.
type objectReader struct {
	r    io.Reader
	size *objectSize
}

func (o *objectReader) Read(p []byte) (int, error) {
	if o.size.over {
		return 0, errObjectTooLarge
	}
	n, err := o.r.Read(p)
	o.size.n += int64(n)
	if o.size.n > o.size.max {
		n -= int(o.size.n - o.size.max)
		o.size.n, o.size.over = o.size.max, true
		return n, errObjectTooLarge
	}
	return n, err
}
