package simulator

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// JSON is a minimal streaming JSON writer that keeps key order, so every
// answer is byte-for-byte deterministic and cheap to build. The zero value
// is ready; NewJSON preallocates.
type JSON struct {
	b     []byte
	comma bool
}

// NewJSON returns a writer with room for n bytes.
func NewJSON(n int) *JSON { return &JSON{b: make([]byte, 0, n)} }

// Bytes returns what was written.
func (w *JSON) Bytes() []byte { return w.b }

func (w *JSON) sep() {
	if w.comma {
		w.b = append(w.b, ',')
	}
}

// Open starts an object ('{') or an array ('[').
func (w *JSON) Open(c byte) {
	w.sep()
	w.b = append(w.b, c)
	w.comma = false
}

// Close ends an object ('}') or an array (']').
func (w *JSON) Close(c byte) {
	w.b = append(w.b, c)
	w.comma = true
}

// Key writes an object key; the value follows.
func (w *JSON) Key(k string) {
	w.sep()
	w.b = appendJSONString(w.b, k)
	w.b = append(w.b, ':')
	w.comma = false
}

// KObject writes an object member k whose own members members writes.
func (w *JSON) KObject(k string, members func()) {
	w.Key(k)
	w.Open('{')
	members()
	w.Close('}')
}

// Str writes a string value.
func (w *JSON) Str(v string) {
	w.sep()
	w.b = appendJSONString(w.b, v)
	w.comma = true
}

// Raw writes a literal (number, true, null) as is.
func (w *JSON) Raw(v string) {
	w.sep()
	w.b = append(w.b, v...)
	w.comma = true
}

// Int writes an integer value.
func (w *JSON) Int(v int64) {
	w.sep()
	w.b = strconv.AppendInt(w.b, v, 10)
	w.comma = true
}

// KStr writes "k":"v".
func (w *JSON) KStr(k, v string) { w.Key(k); w.Str(v) }

// KRaw writes "k":v with v a literal.
func (w *JSON) KRaw(k, v string) { w.Key(k); w.Raw(v) }

// KInt writes "k":v.
func (w *JSON) KInt(k string, v int64) {
	w.Key(k)
	w.Int(v)
}

// KNull writes "k":null.
func (w *JSON) KNull(k string) { w.Key(k); w.Raw("null") }

// KStrOrNull writes the string, or null when it is empty.
func (w *JSON) KStrOrNull(k, v string) {
	if v == "" {
		w.KNull(k)
		return
	}
	w.KStr(k, v)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendXMLText appends s escaped for XML text and attribute values.
func AppendXMLText(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch c {
		case '&':
			b = append(b, "&amp;"...)
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		case '"':
			b = append(b, "&quot;"...)
		case '\'':
			b = append(b, "&apos;"...)
		default:
			if c < 0x20 && c != '\n' && c != '\t' && c != '\r' {
				b = append(b, "&#xFFFD;"...)
				break
			}
			if c >= utf8.RuneSelf {
				r, size := utf8.DecodeRuneInString(s[i:])
				if r == utf8.RuneError && size == 1 {
					b = append(b, "&#xFFFD;"...)
				} else {
					b = append(b, s[i:i+size]...)
				}
				i += size
				continue
			}
			b = append(b, c)
		}
		i++
	}
	return b
}

// AppendXMLElem appends <name>text</name>.
func AppendXMLElem(b []byte, name, text string) []byte {
	b = append(b, '<')
	b = append(b, name...)
	b = append(b, '>')
	b = AppendXMLText(b, text)
	b = append(b, '<', '/')
	b = append(b, name...)
	return append(b, '>')
}

// FormatFixed formats v with exactly dec decimals.
func FormatFixed(v float64, dec int) string {
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// FormatTrim formats v rounded to dec decimals without trailing zeros
// (ECOS style: "3.5", "1305.1").
func FormatTrim(v float64, dec int) string {
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if dec > 0 {
		for s[len(s)-1] == '0' {
			s = s[:len(s)-1]
		}
		if s[len(s)-1] == '.' {
			s = s[:len(s)-1]
		}
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// FormatAmount formats a non-negative amount as an integer string (a
// negative or NaN amount as 0).
func FormatAmount(v float64) string {
	if v < 0 || v != v {
		v = 0
	}
	return strconv.FormatInt(int64(math.Round(v)), 10)
}

// Round rounds v to dec decimals.
func Round(v float64, dec int) float64 {
	p := math.Pow(10, float64(dec))
	return math.Round(v*p) / p
}
