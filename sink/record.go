package sink

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
)

// record is the metadata stored with every object: as x-amz-meta-* headers
// on S3, as a JSON trailer frame in the local lake. Nothing in it is secret.
type record struct {
	RawSHA256      string    `json:"raw_sha256"`
	RawSize        int64     `json:"raw_size"`
	CompressedSize int64     `json:"compressed_size"`
	ContentType    string    `json:"content_type,omitempty"`
	SourceURL      string    `json:"source_url,omitempty"`
	FetchedAt      time.Time `json:"fetched_at"`
	Writer         string    `json:"sluice_version,omitempty"`
	// Pages is the number of pages when more than one (0 and 1 both mean
	// one page: objects written before paging record none).
	Pages int `json:"pages,omitempty"`
	// PageIndexSize is the size of the page index frame that ends the
	// zstd stream of a multi-page object.
	PageIndexSize int64 `json:"page_index_size,omitempty"`
	// WindowFrom and WindowTo (YYYY-MM-DD) are the span of dates the
	// provider was asked for, both or neither.
	WindowFrom string `json:"window_from,omitempty"`
	WindowTo   string `json:"window_to,omitempty"`
}

// window returns the record's window (zero when it names none or its
// dates do not parse; validate rejects those).
func (r record) window() Window {
	if r.WindowFrom == "" {
		return Window{}
	}
	from, err1 := time.Parse(time.DateOnly, r.WindowFrom)
	to, err2 := time.Parse(time.DateOnly, r.WindowTo)
	if err1 != nil || err2 != nil {
		return Window{}
	}
	return Window{From: from, To: to}
}

// pages returns the page count, at least 1.
func (r record) pages() int { return max(r.Pages, 1) }

// S3 user-metadata names (sent as x-amz-meta-<name>).
const (
	metaRawSHA256      = "sluice-raw-sha256"
	metaRawSize        = "sluice-raw-size"
	metaCompressedSize = "sluice-compressed-size"
	metaContentType    = "sluice-content-type"
	metaSourceURL      = "sluice-source-url"
	metaFetchedAt      = "sluice-fetched-at"
	metaWriter         = "sluice-version"
	metaPages          = "sluice-pages"
	metaPageIndexSize  = "sluice-page-index-size"
	metaWindowFrom     = "sluice-window-from"
	metaWindowTo       = "sluice-window-to"
)

// maxContentTypeLen bounds the content type kept in metadata.
const maxContentTypeLen = 256

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// newRecord builds the metadata of a finished stream.
func newRecord(meta Meta, sum []byte, rawSize, compressedSize int64, writer string) record {
	var from, to string
	if !meta.Window.IsZero() {
		f, t := civil(meta.Window.From), civil(meta.Window.To)
		if t.IsZero() || t.Before(f) {
			t = f
		}
		from, to = f.Format(time.DateOnly), t.Format(time.DateOnly)
	}
	return record{
		WindowFrom:     from,
		WindowTo:       to,
		RawSHA256:      hex.EncodeToString(sum),
		RawSize:        rawSize,
		CompressedSize: compressedSize,
		ContentType:    truncate(asciiOnly(meta.ContentType), maxContentTypeLen),
		SourceURL:      cleanSourceURL(meta.SourceURL),
		FetchedAt:      meta.FetchedAt.UTC(),
		Writer:         asciiOnly(writer),
	}
}

// object turns a record into the Object for key.
func (r record) object(key string, modified time.Time) Object {
	return Object{
		Key:            key,
		RawSHA256:      r.RawSHA256,
		RawSize:        r.RawSize,
		CompressedSize: r.CompressedSize,
		ContentType:    r.ContentType,
		SourceURL:      r.SourceURL,
		FetchedAt:      r.FetchedAt,
		Writer:         r.Writer,
		Pages:          r.pages(),
		Window:         r.window(),
		Modified:       modified,
	}
}

// headers renders the record as S3 user metadata.
func (r record) headers() map[string]string {
	h := map[string]string{
		metaRawSHA256:      r.RawSHA256,
		metaRawSize:        strconv.FormatInt(r.RawSize, 10),
		metaCompressedSize: strconv.FormatInt(r.CompressedSize, 10),
		metaFetchedAt:      r.FetchedAt.Format(time.RFC3339Nano),
	}
	if r.ContentType != "" {
		h[metaContentType] = r.ContentType
	}
	if r.SourceURL != "" {
		h[metaSourceURL] = r.SourceURL
	}
	if r.Writer != "" {
		h[metaWriter] = r.Writer
	}
	if r.Pages > 1 {
		h[metaPages] = strconv.Itoa(r.Pages)
		h[metaPageIndexSize] = strconv.FormatInt(r.PageIndexSize, 10)
	}
	if r.WindowFrom != "" {
		h[metaWindowFrom], h[metaWindowTo] = r.WindowFrom, r.WindowTo
	}
	return h
}

// recordFromHeaders parses S3 user metadata. It reports false when the
// object carries no valid Sluice metadata (put there by another tool, or
// with a damaged value): such objects list without metadata and fail
// verification.
func recordFromHeaders(h map[string]string) (record, bool) {
	r := record{
		RawSHA256:   h[metaRawSHA256],
		ContentType: h[metaContentType],
		SourceURL:   h[metaSourceURL],
		Writer:      h[metaWriter],
		WindowFrom:  h[metaWindowFrom],
		WindowTo:    h[metaWindowTo],
	}
	var err error
	if r.RawSize, err = strconv.ParseInt(h[metaRawSize], 10, 64); err != nil {
		return record{}, false
	}
	if r.CompressedSize, err = strconv.ParseInt(h[metaCompressedSize], 10, 64); err != nil {
		return record{}, false
	}
	if v := h[metaFetchedAt]; v != "" {
		if r.FetchedAt, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return record{}, false
		}
	}
	if v := h[metaPages]; v != "" {
		if r.Pages, err = strconv.Atoi(v); err != nil {
			return record{}, false
		}
		if r.PageIndexSize, err = strconv.ParseInt(h[metaPageIndexSize], 10, 64); err != nil {
			return record{}, false
		}
	}
	if r.validate() != nil {
		return record{}, false
	}
	return r, true
}

func checkSHA256(s string) error {
	if len(s) != 64 {
		return fmt.Errorf("sha256 %q is not 64 hex digits", printable(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'f') {
			return fmt.Errorf("sha256 %q is not lower-case hex", printable(s))
		}
	}
	return nil
}

// validate checks a record read back from a store.
func (r record) validate() error {
	if err := checkSHA256(r.RawSHA256); err != nil {
		return err
	}
	if r.RawSize < 0 || r.CompressedSize < 0 {
		return fmt.Errorf("negative size (raw %d, compressed %d)", r.RawSize, r.CompressedSize)
	}
	switch {
	case r.Pages < 0:
		return fmt.Errorf("negative page count %d", r.Pages)
	case r.Pages > 1 && (r.PageIndexSize < minPageIndexLen || r.PageIndexSize > r.CompressedSize ||
		r.PageIndexSize > maxPageIndexJSON+trailerHeader+trailerFooter):
		return fmt.Errorf("%d pages with a page index of %d bytes in a %d-byte stream", r.Pages, r.PageIndexSize, r.CompressedSize)
	case r.Pages <= 1 && r.PageIndexSize != 0:
		return fmt.Errorf("a page index of %d bytes for one page", r.PageIndexSize)
	}
	if r.WindowFrom != "" || r.WindowTo != "" {
		from, err1 := time.Parse(time.DateOnly, r.WindowFrom)
		to, err2 := time.Parse(time.DateOnly, r.WindowTo)
		if err1 != nil || err2 != nil || to.Before(from) {
			return fmt.Errorf("window %q..%q is not two dates YYYY-MM-DD in order", printable(r.WindowFrom), printable(r.WindowTo))
		}
	}
	return nil
}
