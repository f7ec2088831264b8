package simulator

import (
	"strconv"
	"unicode/utf8"
)

// jw is a minimal streaming JSON writer that keeps key order, so every
// answer is byte-for-byte deterministic and cheap to build.
type jw struct {
	b     []byte
	comma bool
}

func (w *jw) sep() {
	if w.comma {
		w.b = append(w.b, ',')
	}
}

func (w *jw) open(c byte) {
	w.sep()
	w.b = append(w.b, c)
	w.comma = false
}

func (w *jw) close(c byte) {
	w.b = append(w.b, c)
	w.comma = true
}

func (w *jw) key(k string) {
	w.sep()
	w.b = appendJSONString(w.b, k)
	w.b = append(w.b, ':')
	w.comma = false
}

func (w *jw) str(v string) {
	w.sep()
	w.b = appendJSONString(w.b, v)
	w.comma = true
}

// raw writes a literal (number, true, null) as is.
func (w *jw) raw(v string) {
	w.sep()
	w.b = append(w.b, v...)
	w.comma = true
}

func (w *jw) int(v int64) {
	w.sep()
	w.b = strconv.AppendInt(w.b, v, 10)
	w.comma = true
}

func (w *jw) kstr(k, v string) { w.key(k); w.str(v) }
func (w *jw) kraw(k, v string) { w.key(k); w.raw(v) }
func (w *jw) kint(k string, v int64) {
	w.key(k)
	w.int(v)
}

// knull writes "k":null.
func (w *jw) knull(k string) { w.key(k); w.raw("null") }

// kstrOrNull writes the string, or null when it is empty.
func (w *jw) kstrOrNull(k, v string) {
	if v == "" {
		w.knull(k)
		return
	}
	w.kstr(k, v)
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

// appendXMLText appends s escaped for XML text and attribute values.
func appendXMLText(b []byte, s string) []byte {
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

// xelem appends <name>text</name>.
func xelem(b []byte, name, text string) []byte {
	b = append(b, '<')
	b = append(b, name...)
	b = append(b, '>')
	b = appendXMLText(b, text)
	b = append(b, '<', '/')
	b = append(b, name...)
	return append(b, '>')
}

// formatFixed formats v with exactly dec decimals.
func formatFixed(v float64, dec int) string {
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// formatTrim formats v rounded to dec decimals without trailing zeros
// (ECOS style: "3.5", "1305.1").
func formatTrim(v float64, dec int) string {
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
