package watch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/connector"
)

// Shape is the structure of an answer: its field paths and their types,
// never its values. Two answers with the same fields of the same types
// have the same Fingerprint whatever their values and key order.
type Shape struct {
	Fields []Field `json:"fields,omitempty"` // sorted by Path
	// Truncated is true when the answer was deeper than MaxShapeDepth or
	// had more than MaxShapeFields paths: the rest was not fingerprinted.
	Truncated bool `json:"truncated,omitempty"`
}

// Field is one path of a Shape and the types seen at it.
//
// JSON paths start at $ with .key (or ["key"] for keys that are not plain
// identifiers) and [] for the elements of an array:
// $.response.body.items.item[].basDt. Types are object, array, string,
// number, bool and null, several joined by | in sorted order when the
// elements of an array differ (number|null).
//
// XML paths are /root/child for elements and /root/child/@attr for
// attributes (local names, namespaces dropped). Types are element (has
// child elements), text (has non-blank text) and empty, joined by | when
// repeated elements differ.
type Field struct {
	Path string `json:"path"`
	Type string `json:"type"`
}

// Limits on fingerprinting: deeper or wider answers are truncated (and
// marked so), never rejected.
const (
	MaxShapeDepth  = 64
	MaxShapeFields = 2048
	maxKeyBytes    = 256
)

// Empty reports whether the shape has no fields.
func (s Shape) Empty() bool { return len(s.Fields) == 0 }

// Fingerprint is the hex SHA-256 of the shape's canonical text; "" for an
// empty shape.
func (s Shape) Fingerprint() string {
	if s.Empty() {
		return ""
	}
	h := sha256.New()
	for _, f := range s.Fields {
		io.WriteString(h, f.Path)
		io.WriteString(h, "\t")
		io.WriteString(h, f.Type)
		io.WriteString(h, "\n")
	}
	if s.Truncated {
		io.WriteString(h, "truncated\n")
	}
	return hex.EncodeToString(h.Sum(nil))
}

// shapeBuilder collects the types seen per path.
type shapeBuilder struct {
	types     map[string]map[string]bool
	truncated bool
}

func newShapeBuilder() *shapeBuilder { return &shapeBuilder{types: map[string]map[string]bool{}} }

func (b *shapeBuilder) add(path, typ string) {
	set, ok := b.types[path]
	if !ok {
		if len(b.types) >= MaxShapeFields {
			b.truncated = true
			return
		}
		set = map[string]bool{}
		b.types[path] = set
	}
	if typ != "" {
		set[typ] = true
	}
}

func (b *shapeBuilder) shape() Shape {
	s := Shape{Truncated: b.truncated, Fields: make([]Field, 0, len(b.types))}
	for p, set := range b.types {
		ts := make([]string, 0, len(set))
		for t := range set {
			ts = append(ts, t)
		}
		sort.Strings(ts)
		s.Fields = append(s.Fields, Field{Path: p, Type: strings.Join(ts, "|")})
	}
	sort.Slice(s.Fields, func(i, j int) bool { return s.Fields[i].Path < s.Fields[j].Path })
	return s
}

// jsonKey appends a key to a JSON path.
func jsonKey(path, key string) string {
	if len(key) > maxKeyBytes {
		key = truncateUTF8(key, maxKeyBytes) + "…"
	}
	plain := key != ""
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			plain = false
			break
		}
	}
	if plain {
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// FingerprintJSON returns the shape of one JSON value. Syntax errors,
// trailing data and empty input are errors; an answer too deep or too wide
// is truncated (Shape.Truncated), never an error. It never panics.
func FingerprintJSON(data []byte) (Shape, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	b := newShapeBuilder()
	type frame struct {
		path   string
		object bool
		key    string // the pending key inside an object
		atKey  bool   // an object frame expecting a key
	}
	var stack []frame
	skip := 0 // nesting depth of a subtree skipped past MaxShapeDepth
	done := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if !done {
				return Shape{}, errors.New("fingerprinting JSON: no value")
			}
			return b.shape(), nil
		}
		if err != nil {
			return Shape{}, fmt.Errorf("fingerprinting JSON: %w", err)
		}
		if done {
			return Shape{}, errors.New("fingerprinting JSON: data after the top-level value")
		}
		if skip > 0 {
			if d, ok := tok.(json.Delim); ok {
				switch d {
				case '{', '[':
					skip++
				default:
					skip--
				}
			}
			if skip == 0 {
				// The skipped subtree was a value in its parent frame.
				if n := len(stack); n > 0 && stack[n-1].object {
					stack[n-1].atKey = true
				}
				if len(stack) == 0 {
					done = true
				}
			}
			continue
		}
		// Where the token goes.
		var path string
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			if top.object && top.atKey {
				if d, ok := tok.(json.Delim); ok && d == '}' {
					stack = stack[:n-1]
					goto closed
				}
				key, _ := tok.(string)
				top.key, top.atKey = key, false
				continue
			}
			if !top.object {
				if d, ok := tok.(json.Delim); ok && d == ']' {
					stack = stack[:n-1]
					goto closed
				}
				path = top.path + "[]"
			} else {
				path = jsonKey(top.path, top.key)
				top.atKey = true
			}
		} else {
			path = "$"
		}
		switch v := tok.(type) {
		case json.Delim:
			typ := "object"
			if v == '[' {
				typ = "array"
			}
			b.add(path, typ)
			if len(stack) >= MaxShapeDepth {
				b.truncated = true
				skip = 1
				continue
			}
			stack = append(stack, frame{path: path, object: v == '{', atKey: v == '{'})
			continue
		case string:
			b.add(path, "string")
		case json.Number:
			b.add(path, "number")
		case bool:
			b.add(path, "bool")
		case nil:
			b.add(path, "null")
		}
	closed:
		if len(stack) == 0 {
			done = true
		}
	}
}

// FingerprintXML returns the shape of an XML document: element and
// attribute paths with what they hold. Syntax errors, a second root
// element and a document with no element are errors; a declared encoding
// other than UTF-8 is read byte for byte (only names matter). It never
// panics.
func FingerprintXML(data []byte) (Shape, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	b := newShapeBuilder()
	type elem struct {
		path           string
		child, hasText bool
	}
	var stack []elem
	roots := 0
	skip := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if len(stack) > 0 || skip > 0 {
				return Shape{}, errors.New("fingerprinting XML: unexpected end of document")
			}
			if roots == 0 {
				return Shape{}, errors.New("fingerprinting XML: no element")
			}
			return b.shape(), nil
		}
		if err != nil {
			return Shape{}, fmt.Errorf("fingerprinting XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if skip > 0 {
				skip++
				continue
			}
			if len(stack) == 0 {
				roots++
				if roots > 1 {
					return Shape{}, errors.New("fingerprinting XML: more than one root element")
				}
			} else {
				stack[len(stack)-1].child = true
			}
			parent := ""
			if len(stack) > 0 {
				parent = stack[len(stack)-1].path
			}
			p := parent + "/" + xmlName(t.Name.Local)
			if len(stack) >= MaxShapeDepth {
				b.truncated = true
				skip = 1
				continue
			}
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" {
					continue
				}
				b.add(p+"/@"+xmlName(a.Name.Local), "text")
			}
			stack = append(stack, elem{path: p})
		case xml.EndElement:
			if skip > 0 {
				skip--
				continue
			}
			if len(stack) == 0 {
				return Shape{}, errors.New("fingerprinting XML: unbalanced end element")
			}
			e := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			switch {
			case e.child && e.hasText:
				b.add(e.path, "element")
				b.add(e.path, "text")
			case e.child:
				b.add(e.path, "element")
			case e.hasText:
				b.add(e.path, "text")
			default:
				b.add(e.path, "empty")
			}
		case xml.CharData:
			if skip == 0 && len(stack) > 0 && len(bytes.TrimSpace(t)) > 0 {
				stack[len(stack)-1].hasText = true
			} else if len(stack) == 0 && skip == 0 && len(bytes.TrimSpace(t)) > 0 {
				return Shape{}, errors.New("fingerprinting XML: text outside the root element")
			}
		}
	}
}

func xmlName(s string) string {
	if len(s) > maxKeyBytes {
		return truncateUTF8(s, maxKeyBytes) + "…"
	}
	return s
}

// FingerprintBody fingerprints an answer as JSON or XML, by its content
// type when it names one, else by its first non-blank byte. An HTML page
// (connector.IsHTML: a gateway's error page, a maintenance page) is never
// a dataset's answer, whatever its content type says, and is refused: its
// shape would stand for the dataset's until the next real answer, and
// then be reported as a change of schema.
func FingerprintBody(contentType string, body []byte) (Shape, error) {
	if connector.IsHTML(body) {
		return Shape{}, fmt.Errorf("fingerprinting an answer of content type %q: an HTML page, not a dataset's answer", contentType)
	}
	ct := strings.ToLower(contentType)
	switch {
	case strings.Contains(ct, "json"):
		return FingerprintJSON(body)
	case strings.Contains(ct, "xml"):
		return FingerprintXML(body)
	}
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(trimmed) > 0 {
		switch trimmed[0] {
		case '{', '[':
			return FingerprintJSON(body)
		case '<':
			return FingerprintXML(body)
		}
	}
	return Shape{}, fmt.Errorf("fingerprinting an answer of content type %q: neither JSON nor XML", contentType)
}

// ShapeDiff is how one shape differs from another.
type ShapeDiff struct {
	Added   []Field  `json:"added,omitempty"`
	Removed []Field  `json:"removed,omitempty"`
	Retyped []Retype `json:"retyped,omitempty"`
}

// Retype is a field whose type changed.
type Retype struct {
	Path string `json:"path"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Empty reports whether the shapes were the same.
func (d ShapeDiff) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Retyped) == 0
}

// String summarises the diff: "2 fields added ($.a, $.b), 1 removed ($.c),
// 1 retyped ($.d number → string)", at most five paths each.
func (d ShapeDiff) String() string {
	var parts []string
	list := func(n int, what string, names func(i int) string) {
		if n == 0 {
			return
		}
		var sb strings.Builder
		word := "fields"
		if n == 1 {
			word = "field"
		}
		fmt.Fprintf(&sb, "%d %s %s (", n, word, what)
		for i := 0; i < n && i < 5; i++ {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(names(i))
		}
		if n > 5 {
			sb.WriteString(", …")
		}
		sb.WriteString(")")
		parts = append(parts, sb.String())
	}
	list(len(d.Added), "added", func(i int) string { return d.Added[i].Path })
	list(len(d.Removed), "removed", func(i int) string { return d.Removed[i].Path })
	list(len(d.Retyped), "retyped", func(i int) string {
		r := d.Retyped[i]
		return r.Path + " " + r.From + " → " + r.To
	})
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, ", ")
}

// DiffShapes compares two shapes, ignoring what values rather than the
// provider's schema decide:
//
//   - array-ness: a path is compared without its [] segments and the type
//     array is dropped, so an empty array against a filled one, or
//     data.go.kr's single item sent as an object instead of a one-element
//     array, is no change;
//   - null (JSON) and empty (XML): they carry no type, so a field that is
//     null in one answer and a string in the next is not retyped.
//
// A field is added or removed when its normalised path appears on one side
// only, retyped when both sides saw a type and the sets differ.
func DiffShapes(old, new Shape) ShapeDiff {
	a, b := normalise(old), normalise(new)
	var d ShapeDiff
	for _, p := range sortedKeys(b) {
		if _, ok := a[p]; !ok {
			d.Added = append(d.Added, Field{Path: p, Type: b[p]})
		}
	}
	for _, p := range sortedKeys(a) {
		nt, ok := b[p]
		if !ok {
			d.Removed = append(d.Removed, Field{Path: p, Type: a[p]})
			continue
		}
		if a[p] != "" && nt != "" && a[p] != nt {
			d.Retyped = append(d.Retyped, Retype{Path: p, From: a[p], To: nt})
		}
	}
	return d
}

// normalise maps a shape's paths without [] to the types seen there,
// without array, null and empty.
func normalise(s Shape) map[string]string {
	sets := map[string]map[string]bool{}
	for _, f := range s.Fields {
		p := strings.ReplaceAll(f.Path, "[]", "")
		set := sets[p]
		if set == nil {
			set = map[string]bool{}
			sets[p] = set
		}
		for _, t := range strings.Split(f.Type, "|") {
			switch t {
			case "", "array", "null", "empty":
			default:
				set[t] = true
			}
		}
	}
	out := make(map[string]string, len(sets))
	for p, set := range sets {
		ts := make([]string, 0, len(set))
		for t := range set {
			ts = append(ts, t)
		}
		sort.Strings(ts)
		out[p] = strings.Join(ts, "|")
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
