package activities

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
)

// fetched is what fetchPages did.
type fetched struct {
	put       sink.Result
	noData    bool   // page 1 answered NoData: nothing stored
	more      bool   // further pages announced, declined (paging: first_page)
	sourceURL string // page 1's redacted URL
}

// keyError is a lake key that cannot be built: bad input, not a failure.
type keyError struct{ err error }

// Error returns the key error's message.
func (e keyError) Error() string { return e.err.Error() }

// fetchPages fetches the pages of one request, page 1 first, each page a
// connector call of its own (so each waits for its own permit at the
// Gate), and writes them in order as one object: each page is streamed
// into the lake as it arrives, never buffered. It stops when the
// provider's answer says no page follows (Response.Next), when a page
// after the first answers NoData (nothing beyond the previous page), or
// after page 1 when the dataset declares paging: first_page. A provider
// still announcing pages after maxPages fails the ingest (BadRequest,
// code too_many_pages); a next page that repeats the previous request, or
// the previous page's bytes, fails it as Transient (paging_stuck): the
// cursor did not advance. Nothing is stored unless every page arrived.
func (a *Activities) fetchPages(ctx context.Context, conn connector.Connector, ds *registry.Dataset, from, to time.Time, maxPages int) (fetched, error) {
	var out fetched
	req := connector.Request{Provider: a.cfg.Registry.Provider(ds.Provider), Dataset: ds, From: from, To: to}
	var w sink.Writer
	defer func() {
		if w != nil {
			w.Abort() // no-op after Commit
		}
	}()
	fail := func(class connector.Class, code, msg string) error {
		return &connector.Error{Class: class, Provider: ds.Provider, Dataset: ds.ID, Code: code, Message: msg}
	}
	var ext, contentType, prevSHA string
	var fetchedAt time.Time
	for page := 1; ; page++ {
		resp, err := conn.Fetch(ctx, req)
		if err != nil {
			if c, ok := connector.ClassOf(err); ok && c == connector.NoData {
				if page == 1 {
					out.noData = true
					return out, nil
				}
				break // the provider holds nothing beyond the previous page
			}
			return out, err
		}
		if page == 1 {
			key, kerr := sink.Key(sink.KeySpec{Provider: ds.Provider, Dataset: ds.ID, From: from, To: to, Ext: resp.Ext})
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
			return out, fail(connector.Transient, "paging", fmt.Sprintf("page %d is %s where page 1 was %s", page, resp.Ext, ext))
		}
		body := io.Reader(resp.Body)
		if hb := heartbeat(ctx); hb != nil {
			body = &heartbeatReader{r: resp.Body, beat: hb}
		}
		p, err := w.WritePage(body)
		resp.Body.Close()
		if err != nil {
			return out, fmt.Errorf("streaming %s page %d: %w", ds.ID, page, err)
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
	put, err := w.Commit(sink.Meta{ContentType: contentType, SourceURL: out.sourceURL, FetchedAt: fetchedAt})
	out.put = put
	if err != nil {
		return out, fmt.Errorf("streaming %s into %s: %w", ds.ID, put.Key, err)
	}
	return out, nil
}
