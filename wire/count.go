package wire

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Counter counts the rows of one answer as its bytes stream through it,
// without keeping the answer: an io.Writer to tee a page's body into on
// its way to the lake. It reads the answer as Extract does (JSON or XML,
// told apart by the first byte after a byte-order mark and white space;
// the rows where Rows.JSON or Rows.XML puts them) but only counts them:
// the elements of the rows' array, 1 for a single row standing as an
// object (data.go.kr), 0 for an empty place (an empty array, null, "",
// <items/>). Count reports the number only when it is sure of it: the
// answer was whole and well formed and held the rows' place; otherwise it
// reports none, never a guess.
//
// A Counter's memory is bounded by the answer's nesting depth (and names
// of at most maxName bytes), whatever the answer's size.
type Counter struct {
	jsonPath, xmlPath []string

	format byte // 0 undecided, 'j' JSON, 'x' XML, '!' not countable
	bom    int  // byte-order mark bytes seen
	j      jsonScan
	x      xmlScan
}

// utf8BOM is the byte-order mark an answer may start with.
const utf8BOM = "\xef\xbb\xbf"

// maxDepth bounds the nesting a Counter follows (encoding/json's own
// bound); a deeper answer is not counted.
const maxDepth = 10000

// maxName bounds the object keys and element names a Counter keeps; a
// longer one makes the answer uncountable (no row path is that long).
const maxName = 256

// NewCounter returns a Counter of the rows r describes.
func NewCounter(r Rows) *Counter {
	return &Counter{jsonPath: splitPath(r.JSON), xmlPath: splitPath(r.XML)}
}

// Write counts the rows in p, the answer's next bytes. It never fails.
func (c *Counter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		switch c.format {
		case '!':
			return n, nil
		case 'j':
			c.j.write(p)
			return n, nil
		case 'x':
			c.x.write(p)
			return n, nil
		}
		b := p[0]
		switch {
		case c.bom < len(utf8BOM) && b == utf8BOM[c.bom]:
			c.bom++
		case c.bom > 0 && c.bom < len(utf8BOM):
			c.format = '!' // a byte-order mark cut short
		case b == ' ' || b == '\t' || b == '\r' || b == '\n':
			c.bom = len(utf8BOM) // white space: no mark may follow
		case b == '{' || b == '[':
			c.format, c.j.path = 'j', c.jsonPath
			c.j.init()
			continue
		case b == '<':
			c.format, c.x.path = 'x', c.xmlPath
			continue
		default:
			c.format = '!'
		}
		p = p[1:]
	}
	return n, nil
}

// Count returns the rows counted and whether the count is sure: false for
// an answer not whole, not well formed, neither JSON nor XML, or without
// the rows' place (an error envelope).
func (c *Counter) Count() (int, bool) {
	switch c.format {
	case 'j':
		return c.j.count()
	case 'x':
		return c.x.count()
	}
	return 0, false
}

// What a JSON answer's rows' place held, as far as it was read.
const (
	placeNone   = iota // not (yet) seen
	placeArray         // an array: its elements are the rows
	placeObject        // an object: one row
	placeEmpty         // null or "" (here or on the way): no rows
	placeBad           // something Extract refuses (a number, an array on the way)
)

// The JSON scanner's states.
const (
	jValue        = iota // a value must come
	jValueOrClose        // after '[': a value or ']'
	jKeyOrClose          // after '{': a key or '}'
	jKey                 // after ',' in an object: a key
	jColon               // after a key
	jAfter               // after a value: ',' or the container's end
	jString              // in a string
	jNumber              // in a number
	jLiteral             // in true, false or null
	jDone                // the root value ended: white space only
	jBad                 // not JSON: nothing is counted
)

// The states of a number, as JSON's grammar has them.
const (
	nMinus = iota // after '-': a digit must come
	nZero         // a leading 0
	nInt          // integer digits
	nDot          // after '.': a digit must come
	nFrac         // fraction digits
	nE            // after 'e': a sign or a digit
	nESign        // after the exponent's sign: a digit must come
	nExp          // exponent digits
)

type jsonFrame struct {
	obj bool
	// match is, for an object at the path's first match names, match; -1
	// elsewhere.
	match int
	// hit reports that the member being read is named path[match].
	hit bool
	// rows marks the rows' array: its elements are counted.
	rows bool
}

type jsonScan struct {
	path  []string
	state int
	stack []jsonFrame

	// the value being read
	at      int // its place on the path (0 the root, len(path) the rows), or -1
	lit     string
	litPos  int
	num     int
	strKey  bool   // the string is a member's name
	keep    bool   // the name is kept, to compare with the path
	key     []byte // the name as written, escapes and all
	keyLong bool
	strLen  int
	esc     int // 0, 1 after '\', 2..5 hex digits still to come

	place int
	n     int
}

func (s *jsonScan) init() {
	s.state, s.at, s.place = jValue, 0, placeNone
}

func (s *jsonScan) count() (int, bool) {
	if s.state != jDone {
		return 0, false
	}
	switch s.place {
	case placeArray:
		return s.n, true
	case placeObject:
		return 1, true
	case placeEmpty:
		return 0, true
	}
	return 0, false
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

func (s *jsonScan) write(p []byte) {
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch s.state {
		case jBad:
			return
		case jString:
			if s.esc == 0 && !s.keep {
				// The plain run of a string value, at once.
				j := i
				for j < len(p) && p[j] != '"' && p[j] != '\\' && p[j] >= 0x20 {
					j++
				}
				s.strLen += j - i
				if j == len(p) {
					return
				}
				i, b = j, p[j]
			}
			s.stringByte(b)
		case jNumber:
			if !s.numberByte(b) {
				i-- // the byte after the number: read it again as what follows
			}
		case jLiteral:
			if b != s.lit[s.litPos] {
				s.state = jBad
				return
			}
			if s.litPos++; s.litPos == len(s.lit) {
				if s.lit == "null" {
					s.settle(placeEmpty)
				} else {
					s.settle(placeBad)
				}
				s.endValue()
			}
		case jValue, jValueOrClose:
			switch {
			case isSpace(b):
			case b == ']' && s.state == jValueOrClose:
				s.close(false)
			default:
				s.beginValue(b)
			}
		case jKeyOrClose, jKey:
			switch {
			case isSpace(b):
			case b == '}' && s.state == jKeyOrClose:
				s.close(true)
			case b == '"':
				f := &s.stack[len(s.stack)-1]
				s.state, s.strKey, s.keep, s.strLen, s.esc = jString, true, f.match >= 0, 0, 0
				s.key, s.keyLong = s.key[:0], false
			default:
				s.state = jBad
			}
		case jColon:
			switch {
			case isSpace(b):
			case b == ':':
				s.state = jValue
			default:
				s.state = jBad
			}
		case jAfter:
			f := &s.stack[len(s.stack)-1]
			switch {
			case isSpace(b):
			case b == ',' && f.obj:
				s.state = jKey
			case b == ',':
				s.state = jValue
			case b == '}' && f.obj, b == ']' && !f.obj:
				s.close(f.obj)
			default:
				s.state = jBad
			}
		case jDone:
			if !isSpace(b) {
				s.state = jBad
			}
		}
	}
}

// settle records what the value at a place on the path turned out to be.
// A later value at the same place (a repeated member name: the last one
// counts, as encoding/json has it) or nearer the root starts over.
func (s *jsonScan) settle(kind int) {
	if s.at >= 0 {
		s.place = kind
	}
}

// beginValue starts the value whose first byte is b, where s.at places it.
func (s *jsonScan) beginValue(b byte) {
	if n := len(s.stack); n > 0 && s.stack[n-1].rows {
		s.n++
	}
	if s.at >= 0 {
		s.place, s.n = placeNone, 0 // this value replaces what its place held
	}
	switch {
	case b == '{':
		f := jsonFrame{obj: true, match: -1}
		if s.at >= 0 && s.at < len(s.path) {
			f.match = s.at
		} else if s.at == len(s.path) {
			s.place = placeObject
		}
		s.push(f, jKeyOrClose)
	case b == '[':
		f := jsonFrame{match: -1}
		if s.at == len(s.path) {
			s.place, f.rows = placeArray, true
		} else {
			s.settle(placeBad)
		}
		s.push(f, jValueOrClose)
	case b == '"':
		s.state, s.strKey, s.keep, s.strLen, s.esc = jString, false, false, 0, 0
	case b == '-':
		s.state, s.num = jNumber, nMinus
	case b == '0':
		s.state, s.num = jNumber, nZero
	case b >= '1' && b <= '9':
		s.state, s.num = jNumber, nInt
	case b == 't':
		s.state, s.lit, s.litPos = jLiteral, "true", 1
	case b == 'f':
		s.state, s.lit, s.litPos = jLiteral, "false", 1
	case b == 'n':
		s.state, s.lit, s.litPos = jLiteral, "null", 1
	default:
		s.state = jBad
	}
}

func (s *jsonScan) push(f jsonFrame, state int) {
	if len(s.stack) >= maxDepth {
		s.state = jBad
		return
	}
	s.stack = append(s.stack, f)
	s.state, s.at = state, -1
}

// close ends the innermost container, which must be an object (obj) or
// an array.
func (s *jsonScan) close(obj bool) {
	n := len(s.stack)
	if n == 0 || s.stack[n-1].obj != obj {
		s.state = jBad
		return
	}
	s.stack = s.stack[:n-1]
	s.endValue()
}

// endValue moves past a value: to what may follow it in its container, or
// to the end of the answer.
func (s *jsonScan) endValue() {
	s.at = -1
	if len(s.stack) == 0 {
		s.state = jDone
		return
	}
	s.state = jAfter
}

func (s *jsonScan) stringByte(b byte) {
	switch {
	case s.esc == 1:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.esc = 0
		case 'u':
			s.esc = 5
		default:
			s.state = jBad
			return
		}
	case s.esc > 1:
		if !isHex(b) {
			s.state = jBad
			return
		}
		if s.esc++; s.esc == 9 {
			s.esc = 0
		}
	case b == '"':
		s.endString()
		return
	case b == '\\':
		s.esc = 1
	case b < 0x20:
		s.state = jBad
		return
	}
	s.strLen++
	if s.keep {
		if len(s.key) < maxName {
			s.key = append(s.key, b)
		} else {
			s.keyLong = true
		}
	}
}

func isHex(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}

func (s *jsonScan) endString() {
	if !s.strKey {
		if s.strLen == 0 {
			s.settle(placeEmpty)
		} else {
			s.settle(placeBad)
		}
		s.endValue()
		return
	}
	f := &s.stack[len(s.stack)-1]
	f.hit = s.keep && !s.keyLong && s.keyName() == s.path[f.match]
	s.at = -1
	if f.hit {
		s.at = f.match + 1
	}
	s.state = jColon
}

// keyName is the member name read, its escapes decoded.
func (s *jsonScan) keyName() string {
	if bytes.IndexByte(s.key, '\\') < 0 {
		return string(s.key)
	}
	var name string
	if err := json.Unmarshal(append(append([]byte{'"'}, s.key...), '"'), &name); err != nil {
		return ""
	}
	return name
}

// numberByte reads a byte of a number; false when the byte is not the
// number's and ends it (or the number is malformed: the state is jBad).
func (s *jsonScan) numberByte(b byte) bool {
	digit := b >= '0' && b <= '9'
	switch s.num {
	case nMinus:
		switch {
		case b == '0':
			s.num = nZero
		case digit:
			s.num = nInt
		default:
			s.state = jBad
		}
		return true
	case nDot, nESign:
		if !digit {
			s.state = jBad
		} else {
			s.num++
		}
		return true
	case nE:
		switch {
		case b == '+' || b == '-':
			s.num = nESign
		case digit:
			s.num = nExp
		default:
			s.state = jBad
		}
		return true
	}
	// nZero, nInt, nFrac, nExp: the number may end here.
	switch {
	case digit && s.num != nZero:
		return true
	case b == '.' && (s.num == nZero || s.num == nInt):
		s.num = nDot
		return true
	case (b == 'e' || b == 'E') && s.num != nExp:
		s.num = nE
		return true
	}
	s.settle(placeBad)
	s.endValue()
	return false
}

// The XML scanner's states.
const (
	xText    = iota // character data
	xLt             // after '<'
	xBang           // after "<!": a comment, CDATA or a declaration
	xComment        // in <!-- … -->
	xCDATA          // in <![CDATA[ … ]]>
	xDecl           // in <!DOCTYPE …> and the like
	xPI             // in <? … ?>
	xName           // a start tag's name
	xAttrs          // a start tag's attributes
	xSlash          // after '/' in a start tag: '>' must come
	xEndName        // an end tag's name
	xEndTail        // white space after an end tag's name
	xDone           // the root element ended
	xBad            // not XML: nothing is counted
)

type xmlScan struct {
	path  []string
	state int
	names []byte // the open elements' names as written, back to back
	stack []int  // where each open element's name starts in names

	name    []byte // the name being read
	long    bool
	quote   byte   // the quote an attribute value is in, or 0
	mark    []byte // the bytes after "<!" read so far
	tail    int    // the end marker's bytes matched (-->, ]]>, ?>)
	bracket int    // a declaration's open '['
	matched int    // the leading open elements named as the path has it

	root, parent bool // the root named path[0]; the rows' parent seen
	rootSeen     bool
	n            int
}

func (s *xmlScan) count() (int, bool) {
	if s.state != xDone || !s.root || (len(s.path) > 1 && !s.parent) {
		return 0, false
	}
	return s.n, true
}

func isNameStart(b byte) bool {
	return b == '_' || b == ':' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

func isNameEnd(b byte) bool { return isSpace(b) || b == '/' || b == '>' }

func (s *xmlScan) write(p []byte) {
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch s.state {
		case xBad:
			return
		case xText, xDone:
			if len(s.stack) > 0 {
				// Character data inside the root, at once.
				j := bytes.IndexByte(p[i:], '<')
				if j < 0 {
					return
				}
				i, b = i+j, '<'
			}
			if b == '<' {
				s.state = xLt
			} else if len(s.stack) == 0 && !isSpace(b) {
				s.state = xBad // text outside the root
			}
		case xLt:
			switch {
			case b == '?':
				s.state, s.tail = xPI, 0
			case b == '!':
				s.state, s.mark = xBang, s.mark[:0]
			case b == '/':
				s.state, s.name, s.long = xEndName, s.name[:0], false
			case isNameStart(b):
				if s.rootSeen && len(s.stack) == 0 {
					s.state = xBad // a second root: Extract reads it as more of the answer
					return
				}
				s.state, s.name, s.long = xName, append(s.name[:0], b), false
			default:
				s.state = xBad
			}
		case xBang:
			s.mark = append(s.mark, b)
			switch m := string(s.mark); {
			case m == "--":
				s.state, s.tail = xComment, 0
			case m == "[CDATA[":
				if len(s.stack) == 0 {
					s.state = xBad
					return
				}
				s.state, s.tail = xCDATA, 0
			case strings.HasPrefix("--", m), strings.HasPrefix("[CDATA[", m):
			case b == '>':
				s.state = s.text()
			default:
				s.state, s.bracket, s.quote = xDecl, 0, 0
				s.declByte(b)
			}
		case xComment:
			s.seek(b, "-->")
		case xCDATA:
			s.seek(b, "]]>")
		case xPI:
			s.seek(b, "?>")
		case xDecl:
			s.declByte(b)
		case xName:
			if isNameEnd(b) {
				s.start()
				if s.state == xBad {
					return
				}
				s.state, s.quote = xAttrs, 0
				i-- // read the byte again as the tag's rest
				continue
			}
			s.nameByte(b)
		case xAttrs:
			switch {
			case s.quote != 0:
				j := bytes.IndexByte(p[i:], s.quote)
				if j < 0 {
					return
				}
				i, s.quote = i+j, 0
			case b == '"' || b == '\'':
				s.quote = b
			case b == '/':
				s.state = xSlash
			case b == '>':
				s.state = xText
			}
		case xSlash:
			if b != '>' {
				s.state = xBad
				return
			}
			s.end()
		case xEndName:
			if isSpace(b) || b == '>' {
				s.state = xEndTail
				i--
				continue
			}
			s.nameByte(b)
		case xEndTail:
			switch {
			case isSpace(b):
			case b == '>':
				n := len(s.stack)
				if n == 0 || s.long || !bytes.Equal(s.names[s.stack[n-1]:], s.name) {
					s.state = xBad
					return
				}
				s.end()
			default:
				s.state = xBad
			}
		}
	}
}

// text is the state after markup: inside the root, or after it.
func (s *xmlScan) text() int {
	if s.rootSeen && len(s.stack) == 0 {
		return xDone
	}
	return xText
}

// seek skips to the end of a comment, CDATA section or processing
// instruction, marked by end ("-->", "]]>", "?>": a run of one byte, then
// '>').
func (s *xmlScan) seek(b byte, end string) {
	last := len(end) - 1
	switch {
	case b == end[last] && s.tail == last:
		s.state = s.text()
	case b == end[0]:
		s.tail = min(s.tail+1, last)
	default:
		s.tail = 0
	}
}

// declByte reads a byte of a declaration (<!DOCTYPE …>): it ends at a '>'
// outside quotes and brackets.
func (s *xmlScan) declByte(b byte) {
	switch {
	case s.quote != 0:
		if b == s.quote {
			s.quote = 0
		}
	case b == '"' || b == '\'':
		s.quote = b
	case b == '[':
		s.bracket++
	case b == ']':
		s.bracket--
	case b == '>' && s.bracket <= 0:
		s.state = s.text()
	}
}

func (s *xmlScan) nameByte(b byte) {
	if len(s.name) < maxName {
		s.name = append(s.name, b)
	} else {
		s.long = true
	}
}

// local is an element's name without its namespace prefix, as
// encoding/xml reads it; ok is false for a name it would not read.
func local(name []byte) ([]byte, bool) {
	prefix, rest, found := bytes.Cut(name, []byte{':'})
	switch {
	case !found:
		return name, true
	case bytes.IndexByte(rest, ':') >= 0:
		return nil, false
	case len(prefix) == 0 || len(rest) == 0:
		return name, true
	}
	return rest, true
}

// start opens the element just named.
func (s *xmlScan) start() {
	if s.long || len(s.stack) >= maxDepth {
		s.state = xBad
		return
	}
	loc, ok := local(s.name)
	if !ok {
		s.state = xBad
		return
	}
	d := len(s.stack) + 1
	s.stack = append(s.stack, len(s.names))
	s.names = append(s.names, s.name...)
	if d == 1 {
		s.rootSeen = true
		s.root = len(s.path) > 0 && string(loc) == s.path[0]
	}
	if s.matched == d-1 && d <= len(s.path) && string(loc) == s.path[d-1] {
		s.matched = d
		switch d {
		case len(s.path):
			s.n++
		case len(s.path) - 1:
			s.parent = true
		}
	}
}

// end closes the innermost element (an end tag, or a start tag's '/>').
func (s *xmlScan) end() {
	d := len(s.stack)
	s.names = s.names[:s.stack[d-1]]
	s.stack = s.stack[:d-1]
	if s.matched == d {
		s.matched = d - 1
	}
	s.state = s.text()
}
