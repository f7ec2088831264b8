package registry

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Bounds cap what one provider answer, and one lake object, may cost: a
// hostile or broken provider (a gzip bomb, a body trickling a byte a
// second, a paging cursor that never ends) fails the call with a clear
// error instead of filling the disk or holding a worker until the
// activity's timeout. A provider's bounds block sets them for its
// datasets; a dataset's bounds block overrides single fields. A zero
// field means the default (DefaultBounds).
type Bounds struct {
	// PageBytes caps one page — one provider answer — in bytes, counted
	// as decoded, whatever its Content-Encoding (bounds.max_page_mib).
	PageBytes int64
	// ObjectBytes caps one lake object: the decoded bytes of every page
	// one ingest writes into it (bounds.max_object_mib).
	ObjectBytes int64
	// PageTimeout bounds one page from the moment its request is sent to
	// the last byte of its body, however steadily the body trickles
	// (bounds.page_timeout_seconds).
	PageTimeout time.Duration
}

// The default bounds.
const (
	// DefaultPageBytes is 64 MiB: the largest answer the registry's
	// providers give (an ECOS page of 100,000 rows, a FRED series of
	// every observation since 1962) is a few MiB.
	DefaultPageBytes = 64 << 20
	// DefaultObjectBytes is 1 GiB: max_pages_per_call pages of a MiB.
	DefaultObjectBytes = 1 << 30
	// DefaultPageTimeout is 5 minutes: ECOS, the slowest provider, gives
	// up on a query itself after 60 s, and no page of a few MiB takes
	// longer than a minute on any link Sluice runs on.
	DefaultPageTimeout = 5 * time.Minute
)

// The ranges the registry accepts.
const (
	maxPageMiB         = 4096    // 4 GiB
	maxObjectMiB       = 1 << 16 // 64 GiB
	maxPageTimeoutSecs = 1800    // the daily ingest activity's start-to-close timeout
)

// DefaultBounds returns the bounds that apply where nothing is declared.
func DefaultBounds() Bounds {
	return Bounds{PageBytes: DefaultPageBytes, ObjectBytes: DefaultObjectBytes, PageTimeout: DefaultPageTimeout}
}

// Merge returns b with every field o sets (non-zero) replacing b's.
func (b Bounds) Merge(o Bounds) Bounds {
	if o.PageBytes > 0 {
		b.PageBytes = o.PageBytes
	}
	if o.ObjectBytes > 0 {
		b.ObjectBytes = o.ObjectBytes
	}
	if o.PageTimeout > 0 {
		b.PageTimeout = o.PageTimeout
	}
	return b
}

// OrDefault returns b with every unset field given its default.
func (b Bounds) OrDefault() Bounds { return DefaultBounds().Merge(b) }

// boundsDecl is a bounds block as declared, with where each field was.
type boundsDecl struct {
	Bounds
	pos map[string]Pos // by field name: max_page_mib, max_object_mib, page_timeout_seconds
}

// bounds decodes a bounds block: whole MiB and whole seconds, each in its
// range.
func (d *decoder) bounds(n *yaml.Node, path string) boundsDecl {
	decl := boundsDecl{pos: map[string]Pos{}}
	d.mapping(n, path, []field{
		{"max_page_mib", func(n *yaml.Node, p string) {
			if v, ok := d.intValue(n, p, 1, maxPageMiB); ok {
				decl.PageBytes, decl.pos["max_page_mib"] = int64(v)<<20, d.pos(n, p)
			}
		}},
		{"max_object_mib", func(n *yaml.Node, p string) {
			if v, ok := d.intValue(n, p, 1, maxObjectMiB); ok {
				decl.ObjectBytes, decl.pos["max_object_mib"] = int64(v)<<20, d.pos(n, p)
			}
		}},
		{"page_timeout_seconds", func(n *yaml.Node, p string) {
			if v, ok := d.intValue(n, p, 1, maxPageTimeoutSecs); ok {
				decl.PageTimeout, decl.pos["page_timeout_seconds"] = time.Duration(v)*time.Second, d.pos(n, p)
			}
		}},
	})
	return decl
}

// checkBounds reports resolved bounds whose object cap is below their page
// cap (an object holds at least one whole page), at the field of decl that
// set the smaller one: the object's when decl declares it, else the
// page's. A decl that declares neither reports nothing (what it inherits
// was checked where it was declared).
func checkBounds(errs *Errors, b Bounds, decl boundsDecl, what string) {
	if b.ObjectBytes >= b.PageBytes {
		return
	}
	p, ok := decl.pos["max_object_mib"]
	if !ok {
		if p, ok = decl.pos["max_page_mib"]; !ok {
			return
		}
	}
	*errs = append(*errs, Problem{File: p.File, Line: p.Line, Path: p.Path,
		Msg: fmt.Sprintf("%s: max_object_mib %d is less than max_page_mib %d: an object holds at least one whole page; raise max_object_mib or lower max_page_mib",
			what, b.ObjectBytes>>20, b.PageBytes>>20)})
}
