package registry

import (
	"cmp"
	"time"
)

// Tri is a yes/no answer that may also be explicitly unknown, as the terms of
// use of a provider often are. The zero value means "not declared".
type Tri int

// Tri values.
const (
	TriUnset Tri = iota
	TriTrue
	TriFalse
	TriUnknown
)

// String returns true, false, unknown or "" for an unset value.
func (t Tri) String() string {
	switch t {
	case TriTrue:
		return "true"
	case TriFalse:
		return "false"
	case TriUnknown:
		return "unknown"
	}
	return ""
}

// Redistribution values, in kpubdata LicenseSpec vocabulary.
var redistributionValues = []string{"allowed", "non_commercial", "prohibited", "unknown"}

// Terms are the terms of use of a provider or dataset, in the vocabulary of
// kpubdata's LicenseSpec (docs/registry.md, "terms"): Sluice does not invent a
// second one. Empty strings and TriUnset mean "not declared here"; a
// dataset's Terms override its provider's field by field.
type Terms struct {
	Type                string   // licence type, e.g. KOGL-1, proprietary
	CommercialUse       Tri      // may the data be used commercially
	AttributionRequired Tri      // must the source be credited
	Attribution         string   // the credit text, verbatim (often Korean)
	Redistribution      string   // allowed, non_commercial, prohibited, unknown
	ModificationAllowed Tri      // may the data be modified
	PIIColumns          []string // columns holding personal data
	PIIColumnsSet       bool     // pii_columns was written (an empty list is a statement)
	Note                string   // free text
}

// Merge returns t with every field that o declares replacing t's (a
// field o leaves at its zero value, TriUnset or "", keeps t's).
func (t Terms) Merge(o Terms) Terms {
	t.Type = cmp.Or(o.Type, t.Type)
	t.CommercialUse = cmp.Or(o.CommercialUse, t.CommercialUse)
	t.AttributionRequired = cmp.Or(o.AttributionRequired, t.AttributionRequired)
	t.Attribution = cmp.Or(o.Attribution, t.Attribution)
	t.Redistribution = cmp.Or(o.Redistribution, t.Redistribution)
	t.ModificationAllowed = cmp.Or(o.ModificationAllowed, t.ModificationAllowed)
	if o.PIIColumnsSet {
		t.PIIColumns = append([]string(nil), o.PIIColumns...)
		t.PIIColumnsSet = true
	}
	t.Note = cmp.Or(o.Note, t.Note)
	return t
}

// Source says where a declared value was read and when a person last
// checked it. Nothing refreshes it automatically.
type Source struct {
	URL        string
	VerifiedAt time.Time // a civil date, at 00:00 UTC
	Pos        Pos
}

// Pos is where something was declared.
type Pos struct {
	File string
	Line int
	Path string
}

// String formats the position as file:line, or the file alone.
func (p Pos) String() string {
	if p.Line > 0 {
		return p.File + ":" + itoa(p.Line)
	}
	return p.File
}
