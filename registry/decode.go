package registry

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// decoder walks yaml.v3 nodes, collecting every problem with its file,
// line and YAML path instead of stopping at the first.
type decoder struct {
	file     string
	errs     *Errors
	now      time.Time
	findings *[]Finding // where findings found while decoding go; nil: none
}

func (d *decoder) pos(n *yaml.Node, path string) Pos {
	line := 0
	if n != nil {
		line = n.Line
	}
	return Pos{File: d.file, Line: line, Path: path}
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	*d.errs = append(*d.errs, Problem{File: d.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// field is one allowed key of a mapping and what to do with its value.
type field struct {
	name string
	fn   func(n *yaml.Node, path string)
}

// mapping checks that n is a mapping, rejects unknown and duplicate keys
// (naming the allowed ones), and hands each value to its field. It returns
// the set of keys present.
func (d *decoder) mapping(n *yaml.Node, path string, fields []field) map[string]*yaml.Node {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected a mapping, got %s", describe(n))
		return nil
	}
	present := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, path, "expected a field name, got %s", describe(k))
			continue
		}
		p := join(path, key)
		if _, dup := present[key]; dup {
			d.errorf(k, p, "duplicate field %q (first at line %d)", key, present[key].Line)
			continue
		}
		present[key] = k
		var f *field
		for j := range fields {
			if fields[j].name == key {
				f = &fields[j]
				break
			}
		}
		if f == nil {
			names := make([]string, len(fields))
			for j, f := range fields {
				names[j] = f.name
			}
			d.errorf(k, p, "unknown field %q (allowed: %s)", key, strings.Join(names, ", "))
			continue
		}
		f.fn(v, p)
	}
	return present
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n == nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	return n
}

func describe(n *yaml.Node) string {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.DocumentNode:
		return "a document"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", truncate(n.Value, 60))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func (d *decoder) sequence(n *yaml.Node, path string, fn func(i int, n *yaml.Node, path string)) {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "expected a list, got %s", describe(n))
		return
	}
	for i, item := range n.Content {
		fn(i, item, index(path, i))
	}
}

func (d *decoder) scalar(n *yaml.Node, path string) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.errorf(n, path, "expected a value, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) str(n *yaml.Node, path string) string {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.errorf(n, path, "expected a string, got %s", describe(n))
		return ""
	}
	if n.Value == "" {
		d.errorf(n, path, "must not be empty")
	}
	return n.Value
}

func (d *decoder) strList(n *yaml.Node, path string) []string {
	var out []string
	d.sequence(n, path, func(_ int, item *yaml.Node, p string) {
		if s := d.str(item, p); s != "" {
			out = append(out, s)
		}
	})
	return out
}

func (d *decoder) oneOf(n *yaml.Node, path string, allowed []string) string {
	s := d.str(n, path)
	if s == "" {
		return ""
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	d.errorf(n, path, "invalid value %q (allowed: %s)", s, strings.Join(allowed, ", "))
	return ""
}

// intValue parses a whole number in [lo, hi].
func (d *decoder) intValue(n *yaml.Node, path string, lo, hi int) (int, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.errorf(n, path, "expected a whole number, got %s", describe(n))
		return 0, false
	}
	if n.Tag != "!!int" {
		hint := ""
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			hint = " (a quoted string: remove the quotes)"
		}
		d.errorf(n, path, "expected a whole number, got %q%s", truncate(n.Value, 60), hint)
		return 0, false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
	if err != nil || v < int64(lo) || v > int64(hi) {
		d.errorf(n, path, "value %s out of range (%d to %d)", truncate(n.Value, 30), lo, hi)
		return 0, false
	}
	return int(v), true
}

// countOrUnknown parses a positive count or the literal unknown.
func (d *decoder) countOrUnknown(n *yaml.Node, path string) (count int, unknown, ok bool) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.Value == "unknown" {
		return 0, true, true
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		v, err := strconv.Atoi(strings.ReplaceAll(n.Value, "_", ""))
		if err == nil && v <= 0 {
			d.errorf(n, path, "must be positive, got %d (a limit of zero allows no call at all; write unknown if the number is not known)", v)
			return 0, false, false
		}
	}
	v, ok := d.intValue(n, path, 1, math.MaxInt32)
	return v, false, ok
}

func (d *decoder) boolValue(n *yaml.Node, path string) (bool, bool) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		switch strings.ToLower(n.Value) {
		case "true", "yes", "on":
			return true, true
		case "false", "no", "off":
			return false, true
		}
	}
	d.errorf(n, path, "expected true or false, got %s", describe(n))
	return false, false
}

func (d *decoder) tri(n *yaml.Node, path string) Tri {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.Value == "unknown" {
		return TriUnknown
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		if b, ok := d.boolValue(n, path); ok {
			if b {
				return TriTrue
			}
			return TriFalse
		}
		return TriUnset
	}
	d.errorf(n, path, "expected true, false or unknown, got %s", describe(n))
	return TriUnset
}

// seconds parses a non-negative number of seconds (fractions allowed) or
// unknown.
func (d *decoder) seconds(n *yaml.Node, path string) (dur time.Duration, unknown, ok bool) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.Value == "unknown" {
		return 0, true, true
	}
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		d.errorf(n, path, "expected a number of seconds or unknown, got %s", describe(n))
		return 0, false, false
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > 86400 {
		d.errorf(n, path, "expected a number of seconds greater than 0 and at most 86400, got %q", n.Value)
		return 0, false, false
	}
	dur = time.Duration(v * float64(time.Second))
	if dur < MinIntervalResolution {
		d.errorf(n, path, "%s seconds is below the limiter's resolution of %g s: it would round to no interval at all; give at least %g, or drop the field",
			truncate(n.Value, 30), MinIntervalResolution.Seconds(), MinIntervalResolution.Seconds())
		return 0, false, false
	}
	return dur, false, true
}

// maxPublicationLagDays bounds probe.publication_lag_days: two years.
const maxPublicationLagDays = 731

// days parses a number of days greater than 0 and at most hi (fractions
// allowed: 1.5 is 36 hours).
func (d *decoder) days(n *yaml.Node, path string, hi float64) (time.Duration, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		hint := ""
		if n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			hint = " (a quoted string: remove the quotes)"
		}
		d.errorf(n, path, "expected a number of days, got %s%s", describe(n), hint)
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > hi {
		d.errorf(n, path, "expected a number of days greater than 0 and at most %g, got %q", hi, truncate(n.Value, 30))
		return 0, false
	}
	dur := time.Duration(v * float64(24*time.Hour))
	if dur < time.Minute {
		d.errorf(n, path, "%q days is less than a minute: a publication lag that small is not meant", truncate(n.Value, 30))
		return 0, false
	}
	return dur, true
}

var idPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func (d *decoder) id(n *yaml.Node, path string) string {
	s := d.str(n, path)
	if s != "" && (!idPattern.MatchString(s) || len(s) > 64) {
		d.errorf(n, path, "invalid id %q: use lower-case letters, digits and single hyphens ([a-z0-9-]+, at most 64 characters)", truncate(s, 60))
		return ""
	}
	return s
}

// url parses an absolute http or https URL.
func (d *decoder) url(n *yaml.Node, path string) string {
	s := d.str(n, path)
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.errorf(n, path, "invalid URL %q: expected an absolute http:// or https:// URL", truncate(s, 80))
		return ""
	}
	return s
}

// date parses a civil date YYYY-MM-DD that is not in the future.
func (d *decoder) date(n *yaml.Node, path string) time.Time {
	s := d.str(n, path)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		d.errorf(n, path, "invalid date %q: expected YYYY-MM-DD", truncate(s, 40))
		return time.Time{}
	}
	if !d.now.IsZero() && t.After(d.now.Add(24*time.Hour)) && d.findings != nil {
		// Reported, not refused: a machine whose clock is behind must
		// still load the registry.
		*d.findings = append(*d.findings, Finding{Kind: FindingFuture, Subject: path, Pos: d.pos(n, path),
			Msg: fmt.Sprintf("date %s is in the future (today is %s): check it, or this machine's clock", s, d.now.Format("2006-01-02"))})
	}
	return t
}

func (d *decoder) source(n *yaml.Node, path string) *Source {
	src := &Source{Pos: d.pos(n, path)}
	present := d.mapping(n, path, []field{
		{"url", func(n *yaml.Node, p string) { src.URL = d.url(n, p) }},
		{"verified_at", func(n *yaml.Node, p string) { src.VerifiedAt = d.date(n, p) }},
	})
	if present != nil {
		for _, req := range []string{"url", "verified_at"} {
			if _, ok := present[req]; !ok {
				d.errorf(n, path, "missing field %q", req)
			}
		}
	}
	return src
}

func (d *decoder) terms(n *yaml.Node, path string) Terms {
	var t Terms
	d.mapping(n, path, []field{
		{"type", func(n *yaml.Node, p string) { t.Type = d.str(n, p) }},
		{"commercial_use", func(n *yaml.Node, p string) { t.CommercialUse = d.tri(n, p) }},
		{"attribution_required", func(n *yaml.Node, p string) { t.AttributionRequired = d.tri(n, p) }},
		{"attribution", func(n *yaml.Node, p string) { t.Attribution = d.str(n, p) }},
		{"redistribution", func(n *yaml.Node, p string) { t.Redistribution = d.oneOf(n, p, redistributionValues) }},
		{"modification_allowed", func(n *yaml.Node, p string) { t.ModificationAllowed = d.tri(n, p) }},
		{"pii_columns", func(n *yaml.Node, p string) { t.PIIColumns = d.strList(n, p); t.PIIColumnsSet = true }},
		{"note", func(n *yaml.Node, p string) { t.Note = d.str(n, p) }},
	})
	return t
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }
