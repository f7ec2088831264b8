package connector

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/ratelimit/permit"
)

// HeadSize is how many bytes of a body are peeked before it is handed on:
// enough for every provider's error envelope and the first keys of its
// success envelope, small enough never to matter for memory.
const HeadSize = 4096

// Head is what a classifier sees of a response: status, headers and the
// first bytes of the body.
type Head struct {
	Status int         // the HTTP status
	Header http.Header // the response headers
	// Bytes are the first HeadSize bytes of the body, or all of it.
	Bytes []byte
	// Complete reports that Bytes is the whole body.
	Complete bool
	// Format is the format asked of the provider: "json" or "xml".
	Format string
	// Now is the connector's clock at the time the head arrived.
	Now time.Time
	// Location is the provider's timezone (daily quotas reset in it).
	Location *time.Location
}

// Verdict is a classifier's decision about a response.
type Verdict struct {
	// Err is nil when the response is a success to hand on. The classifier
	// fills Class, Code, Message and the wait; the connector skeleton fills
	// Provider, Dataset and Status and redacts Message.
	Err *Error
	// More reports that the provider said further pages follow.
	More bool
	// Remaining is what the provider said is left of its own budget, for
	// Options.Limiter's Observe (UPBIT Remaining-Req); nil when it said nothing.
	Remaining *permit.Remaining
}

// Fail returns a Verdict failing with an Error of class c.
func Fail(c Class, code, msg string) Verdict {
	return Verdict{Err: &Error{Class: c, Code: code, Message: msg}}
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Sniff returns "json" when the body starts (after a byte-order mark and
// white space) with '{' or '[', "xml" when it starts with '<', and ""
// otherwise.
func Sniff(head []byte) string {
	b := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n")
	if len(b) == 0 {
		return ""
	}
	switch b[0] {
	case '{', '[':
		return "json"
	case '<':
		return "xml"
	}
	return ""
}

// ReadEnvelope reads a provider's envelope from the head of an answer in
// the format the head is in (Sniff): with fromJSON for JSON, with fromXML
// for XML (nil: the provider answers no XML). Any other head gives the
// zero envelope. It returns the sniffed format too.
func ReadEnvelope[E any](head []byte, fromJSON, fromXML func([]byte) E) (E, string) {
	var env E
	format := Sniff(head)
	switch {
	case format == "json" && fromJSON != nil:
		env = fromJSON(head)
	case format == "xml" && fromXML != nil:
		env = fromXML(head)
	}
	return env, format
}

// htmlStarts are how an HTML page begins (lower-cased, after a byte-order
// mark and white space): a gateway's or web server's error page, a
// maintenance page, a login wall.
var htmlStarts = []string{"<!doctype html", "<html", "<head", "<body", "<title", "<h1", "<p>", "<center>"}

// IsHTML reports whether the head starts like an HTML page. Sniff calls
// such a page "xml"; no provider answers data as HTML.
func IsHTML(head []byte) bool {
	b := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n")
	if len(b) > 16 {
		b = b[:16]
	}
	low := strings.ToLower(string(b))
	for _, s := range htmlStarts {
		if strings.HasPrefix(low, s) {
			return true
		}
	}
	return false
}

// Foreign describes a body that is not what Format asked for: "an empty
// body", "an HTML page", or "a body that is neither JSON nor XML"; it is
// "" when Format asks for nothing or the body sniffs as JSON or XML (one
// for the other is no concern here: data.go.kr answers its errors in XML
// whatever was asked). Such an answer is never the provider's verdict on
// our request — a gateway, proxy or web server in front of the provider
// answered, or the provider broke — so it is Transient (see
// ForeignVerdict), whatever its status.
func (h Head) Foreign() string {
	if h.Format != "json" && h.Format != "xml" {
		return ""
	}
	switch {
	case len(bytes.TrimSpace(bytes.TrimPrefix(h.Bytes, utf8BOM))) == 0:
		return "an empty body"
	case IsHTML(h.Bytes):
		return "an HTML page"
	case Sniff(h.Bytes) == "":
		return "a body that is neither JSON nor XML"
	}
	return ""
}

// ForeignVerdict fails a Foreign answer as Transient: retryable, the
// provider's fault, never our bad request. The code is the HTTP status of
// a non-2xx answer; the message says what was asked and what came, with
// a snippet of it.
func ForeignVerdict(h Head) Verdict {
	what := h.Foreign()
	if what == "" {
		what = "a body that is neither JSON nor XML"
	}
	code, status := "", ""
	if h.Status < 200 || h.Status > 299 {
		code = strconv.Itoa(h.Status)
		status = fmt.Sprintf("HTTP %d %s: ", h.Status, http.StatusText(h.Status))
	}
	asked := "a JSON"
	if h.Format == "xml" {
		asked = "an XML"
	}
	msg := fmt.Sprintf("%sexpected %s answer, got %s", status, asked, what)
	if s := Snippet(h.Bytes, 160); s != "" {
		msg += ": " + s
	}
	return Fail(Transient, code, msg)
}

// Snippet returns up to n runes of the head as one line of valid UTF-8,
// for error messages about answers nobody expected.
func Snippet(head []byte, n int) string {
	s := strings.ToValidUTF8(string(bytes.TrimPrefix(head, utf8BOM)), "\uFFFD")
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = string(r[:n]) + "…"
	}
	return s
}

// JSONEvent is one step of WalkJSON.
type JSONEvent struct {
	// Path names the value: member names from the root, "[]" for an array
	// element. The slice is reused between events: copy it to keep it.
	Path []string
	// Token is a json.Delim ({ [ for a container's start, } ] for its
	// end), a string, a json.Number, a bool or nil.
	Token json.Token
	// Empty is set on a container's end when it had no members.
	Empty bool
}

// At reports whether the event's path is exactly the given names.
func (e JSONEvent) At(names ...string) bool {
	if len(e.Path) != len(names) {
		return false
	}
	for i, n := range names {
		if e.Path[i] != n {
			return false
		}
	}
	return true
}

// String returns the token as a string: strings as they are, numbers in
// their JSON spelling, other tokens empty.
func (e JSONEvent) String() string {
	switch t := e.Token.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	}
	return ""
}

// WalkJSON walks the JSON values in head token by token, calling visit for
// every value and container boundary until visit returns false or the head
// ends (a value cut off by the end of the head is never visited). It
// reports whether the whole document was walked. It never panics and never
// reads beyond head.
func WalkJSON(head []byte, visit func(JSONEvent) bool) bool {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(head, utf8BOM)))
	dec.UseNumber()
	type frame struct {
		obj     bool
		wantKey bool
		key     string
		n       int
	}
	var stack []frame
	var path []string
	pathOf := func() []string {
		path = path[:0]
		for _, f := range stack {
			if f.obj {
				path = append(path, f.key)
			} else {
				path = append(path, "[]")
			}
		}
		return path
	}
	seen := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return err == io.EOF && seen && len(stack) == 0
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if !visit(JSONEvent{Path: pathOf(), Token: d}) {
					return false
				}
				if n := len(stack); n > 0 {
					stack[n-1].n++
					if stack[n-1].obj {
						stack[n-1].wantKey = true
					}
				}
				stack = append(stack, frame{obj: d == '{', wantKey: d == '{'})
			default:
				if len(stack) == 0 {
					return false
				}
				f := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if !visit(JSONEvent{Path: pathOf(), Token: d, Empty: f.n == 0}) {
					return false
				}
				if len(stack) == 0 {
					seen = true
				}
			}
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			k, _ := tok.(string)
			stack[n-1].key = k
			stack[n-1].wantKey = false
			continue
		}
		if !visit(JSONEvent{Path: pathOf(), Token: tok}) {
			return false
		}
		if n := len(stack); n > 0 {
			stack[n-1].n++
			if stack[n-1].obj {
				stack[n-1].wantKey = true
			}
		} else {
			seen = true
		}
	}
}

// XMLEvent is one step of WalkXML.
type XMLEvent struct {
	// Path holds the local names of the element and its ancestors, root
	// first. The slice is reused between events: copy it to keep it.
	Path []string
	// Start is true at an element's start (Attr set), false at its end
	// (Text set).
	Start bool
	// Attr holds the element's attributes at its start.
	Attr []xml.Attr
	// Text is the element's own character data, trimmed.
	Text string
}

// At reports whether the event's path ends with the given names.
func (e XMLEvent) At(names ...string) bool {
	if len(e.Path) < len(names) {
		return false
	}
	off := len(e.Path) - len(names)
	for i, n := range names {
		if !strings.EqualFold(e.Path[off+i], n) {
			return false
		}
	}
	return true
}

// AttrValue returns the value of the named attribute at an element start.
func (e XMLEvent) AttrValue(name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// WalkXML walks the XML elements in head, calling visit at every
// element's start and end until visit returns false or the head ends. It
// reports whether the root element was closed. It never panics, never
// resolves external entities and treats any declared charset as ASCII
// compatible (only codes and ASCII names are read).
func WalkXML(head []byte, visit func(XMLEvent) bool) bool {
	dec := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(head, utf8BOM)))
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var path []string
	var text [][]byte
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name.Local)
			text = append(text, nil)
			if !visit(XMLEvent{Path: path, Start: true, Attr: t.Attr}) {
				return false
			}
		case xml.CharData:
			if n := len(text); n > 0 && len(text[n-1]) < HeadSize {
				text[n-1] = append(text[n-1], t...)
			}
		case xml.EndElement:
			if len(path) == 0 {
				return false
			}
			n := len(path)
			if !visit(XMLEvent{Path: path, Text: strings.TrimSpace(string(text[n-1]))}) {
				return false
			}
			path, text = path[:n-1], text[:n-1]
			if len(path) == 0 {
				return true
			}
		}
	}
}
