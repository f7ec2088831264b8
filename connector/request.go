package connector

import (
	"io"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

// Request asks a connector for one dataset over a range of civil dates.
type Request struct {
	// Dataset is the dataset asked for, one of the connector's provider's.
	Dataset *registry.Dataset
	// From and To are civil dates in the provider's timezone (only the
	// year, month and day are used); To == From asks for one day.
	From, To time.Time
	// Page is the 1-based page for providers that page (ECOS rows, data.go.kr
	// pageNo, KIS tr_cont continuation, FRED offset); 0 means 1. Pages
	// after the first come from Response.Next.
	Page int
	// Cursor is the provider's continuation cursor of a page after the
	// first, as Response.Next set it (UPBIT: the exclusive "to" time of the
	// next, older page); empty on the first page.
	Cursor string
	// Limit overrides the dataset's page size (rows per call) when > 0.
	// Probes use it to ask for a handful of rows.
	Limit int
	// Priority is the class the request's calls wait in at the scope
	// limiter; the zero value is a daily run's.
	Priority permit.Priority
}

// PageOrFirst returns Page, or 1 when Page is 0 or negative.
func (r Request) PageOrFirst() int {
	if r.Page < 1 {
		return 1
	}
	return r.Page
}

// Response is a provider's answer, its head already inspected for errors.
type Response struct {
	// Body yields the response body exactly as the provider sent it
	// (transport compression removed), including the head that was peeked.
	// Read errors are classified (*Error, Transient). The caller must close
	// it.
	Body io.ReadCloser
	// Status is the HTTP status.
	Status int
	// Header holds the selected response headers (see SelectedHeaders).
	Header http.Header
	// URL is the request URL with every secret redacted.
	URL string
	// ContentType is the Content-Type the provider sent.
	ContentType string
	// Ext is "json" or "xml": sniffed from the body, else the content type,
	// else the format asked.
	Ext string
	// More reports that the provider said further pages follow (KIS
	// tr_cont M/F, ECOS list_total_count beyond this page, data.go.kr
	// totalCount beyond this page when it was in the head). False does not
	// prove this is the last page for data.go.kr, whose totalCount may come
	// after the head. Next is the authoritative answer.
	More bool
	// Next, when not nil, names the page after this one: the request to
	// send next, or ok false when this page was the provider's last. Call
	// it only after Body has been read to its end (io.EOF): some providers
	// say at the end of the body whether more follows (data.go.kr
	// totalCount, UPBIT's oldest candle). nil means the answer is one page.
	// An error means the answer does not say reliably, or names a page
	// that does not advance; it carries a Class.
	Next func() (next Request, ok bool, err error)
}

// NextPage returns the request of the page after resp (see
// Response.Next), or ok false when resp was the last page.
func NextPage(resp *Response) (Request, bool, error) {
	if resp == nil || resp.Next == nil {
		return Request{}, false, nil
	}
	return resp.Next()
}

// SelectedHeaders are the response headers a Response keeps.
var SelectedHeaders = []string{
	"Content-Type", "Content-Length", "Content-Encoding", "Date", "Last-Modified", "ETag",
	"Retry-After", "Remaining-Req", "tr_cont", "tr_id", "gt_uid",
}
