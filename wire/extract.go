package wire

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Row is one row of an answer, read by Extract.
type Row struct {
	// Period is the row's period as the provider wrote it.
	Period string
	// Start is the first instant of the period (Format.Parse), or zero
	// when the facts name no period format.
	Start time.Time
	// Keys are the values of Rows.Keys, in order; "" for an absent one.
	Keys []string
	// Values maps each present value field to its text as sent: strings
	// unquoted, JSON numbers and booleans as written; null is absent.
	Values map[string]string
}

// ID identifies the row within its dataset: the period and the keys.
func (r Row) ID() string {
	if len(r.Keys) == 0 {
		return r.Period
	}
	return r.Period + "\x1f" + strings.Join(r.Keys, "\x1f")
}

// Extract reads the rows of a raw answer, JSON or XML (told apart by the
// first byte), as r describes them, in document order. An answer that
// holds no rows where they belong (an empty array, an empty page's
// "items": "" or <items/>) gives none and no error; an answer without the
// place itself (an error envelope), a row without its period, or a period
// that does not parse in r.PeriodFormat is an error naming the row and the
// field. It never panics, whatever body holds.
func Extract(body []byte, r Rows) ([]Row, error) {
	body = bytes.TrimLeft(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(body) == 0 {
		return nil, errors.New("extracting rows: empty answer")
	}
	var rows []Row
	var err error
	switch body[0] {
	case '{', '[':
		rows, err = extractJSON(body, r)
	case '<':
		rows, err = extractXML(body, r)
	default:
		return nil, fmt.Errorf("extracting rows: the answer is neither JSON nor XML (it starts with %q)", truncate(string(body[:min(len(body), 16)]), 16))
	}
	if err != nil {
		return nil, fmt.Errorf("extracting rows: %w", err)
	}
	return rows, nil
}

// Newest returns the row with the latest period (the first of equals), by
// Start when the rows have one, else by the period's text.
func Newest(rows []Row) (Row, bool) {
	if len(rows) == 0 {
		return Row{}, false
	}
	best := rows[0]
	for _, r := range rows[1:] {
		if newer(r, best) {
			best = r
		}
	}
	return best, true
}

func newer(a, b Row) bool {
	if !a.Start.IsZero() && !b.Start.IsZero() {
		return a.Start.After(b.Start)
	}
	return a.Period > b.Period
}

// row builds a Row from a field lookup; i is its index for messages.
func (r Rows) row(i int, field func(string) (string, bool)) (Row, error) {
	period, ok := field(r.Period)
	if !ok || period == "" {
		return Row{}, fmt.Errorf("row %d: no period field %q", i, r.Period)
	}
	out := Row{Period: period}
	if r.PeriodFormat != "" {
		t, err := r.PeriodFormat.Parse(period)
		if err != nil {
			return Row{}, fmt.Errorf("row %d: field %q: %v", i, r.Period, err)
		}
		out.Start = t
	}
	if len(r.Keys) > 0 {
		out.Keys = make([]string, len(r.Keys))
		for k, name := range r.Keys {
			out.Keys[k], _ = field(name)
		}
	}
	out.Values = make(map[string]string, len(r.Values))
	for _, name := range r.Values {
		if v, ok := field(name); ok {
			out.Values[name] = v
		}
	}
	return out, nil
}

func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, ".")
}

func extractJSON(body []byte, r Rows) ([]Row, error) {
	cur := json.RawMessage(body)
	if !json.Valid(body) {
		return nil, errors.New("the answer is not valid JSON")
	}
	for i, seg := range splitPath(r.JSON) {
		if empty(cur) {
			return nil, nil
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(cur, &obj); err != nil {
			return nil, fmt.Errorf("%s is not an object", where(r.JSON, i))
		}
		next, ok := obj[seg]
		if !ok {
			return nil, fmt.Errorf("no %q in the answer (rows are expected at %s)", seg, r.JSON)
		}
		cur = next
	}
	cur = bytes.TrimSpace(cur)
	if empty(cur) {
		return nil, nil
	}
	var items []json.RawMessage
	switch cur[0] {
	case '[':
		if err := json.Unmarshal(cur, &items); err != nil {
			return nil, fmt.Errorf("the rows at %s: %v", where(r.JSON, -1), err)
		}
	case '{':
		items = []json.RawMessage{cur} // a single row as an object (data.go.kr)
	default:
		return nil, fmt.Errorf("the rows at %s are neither an array nor an object", where(r.JSON, -1))
	}
	out := make([]Row, 0, len(items))
	for i, item := range items {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(item, &obj); err != nil {
			return nil, fmt.Errorf("row %d is not an object", i)
		}
		row, err := r.row(i, func(name string) (string, bool) { return jsonText(obj[name]) })
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, nil
}

// where names a prefix of a dotted path for messages: up to segment i
// (exclusive), or all of it for i < 0; "the answer" when empty.
func where(path string, i int) string {
	segs := splitPath(path)
	if i >= 0 && i < len(segs) {
		segs = segs[:i]
	}
	if len(segs) == 0 {
		return "the answer"
	}
	return strings.Join(segs, ".")
}

// empty reports a JSON null or "": a place where no rows stand.
func empty(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null" || string(v) == `""`
}

// jsonText returns a scalar's text: a string unquoted, a number or boolean
// as written. Null, objects and arrays are absent.
func jsonText(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", false
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", false
		}
		return s, true
	case '{', '[', 'n':
		return "", false
	}
	return string(v), true
}

func extractXML(body []byte, r Rows) ([]Row, error) {
	path := splitPath(r.XML)
	if len(path) == 0 {
		return nil, errors.New("an XML answer, but the connector declares no XML rows")
	}
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = true
	dec.CharsetReader = func(charset string, input io.Reader) (io.Reader, error) {
		if strings.EqualFold(charset, "utf-8") || strings.EqualFold(charset, "utf8") {
			return input, nil
		}
		return nil, fmt.Errorf("unsupported XML encoding %q", truncate(charset, 20))
	}
	var (
		stack      []string
		parentSeen bool
		in         bool // inside a row element
		fields     map[string]string
		field      string // the child element being read
		text       strings.Builder
		out        []Row
		rootSeen   bool
	)
	matches := func() bool {
		if len(stack) != len(path) {
			return false
		}
		for i := range path {
			if stack[i] != path[i] {
				return false
			}
		}
		return true
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the answer is not valid XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			if !rootSeen {
				rootSeen = true
				if name != path[0] {
					return nil, fmt.Errorf("the answer's root element is <%s>, not <%s> (rows are expected at %s)", truncate(name, 40), path[0], r.XML)
				}
			}
			stack = append(stack, name)
			switch {
			case in && len(stack) == len(path)+1:
				field = name
				text.Reset()
			case !in && matches():
				in, fields = true, map[string]string{}
				for _, a := range t.Attr {
					fields[a.Name.Local] = a.Value
				}
			}
			if !in && len(stack) == len(path)-1 {
				parentSeen = parentSeen || prefixOf(stack, path)
			}
		case xml.CharData:
			if in && field != "" && len(stack) == len(path)+1 {
				text.Write(t)
			}
		case xml.EndElement:
			switch {
			case in && len(stack) == len(path)+1 && field != "":
				fields[field] = text.String()
				field = ""
			case in && len(stack) == len(path):
				in = false
				row, err := r.row(len(out), func(name string) (string, bool) {
					v, ok := fields[name]
					return v, ok
				})
				if err != nil {
					return nil, err
				}
				out = append(out, row)
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	if !rootSeen {
		return nil, errors.New("the answer holds no XML element")
	}
	if len(path) > 1 && !parentSeen {
		return nil, fmt.Errorf("no <%s> in the answer (rows are expected at %s)", path[len(path)-2], r.XML)
	}
	return out, nil
}

// prefixOf reports whether stack equals the first len(stack) names of path.
func prefixOf(stack, path []string) bool {
	if len(stack) > len(path) {
		return false
	}
	for i := range stack {
		if stack[i] != path[i] {
			return false
		}
	}
	return true
}
