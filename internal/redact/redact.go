// Package redact removes secrets from text and URLs before they reach a
// log, an error, a Temporal history or object metadata. It works two ways:
//
//   - by value (Values): every known secret is replaced in whatever
//     spelling it took on its way through URLs, JSON, HTML and logs —
//     percent escapes in either case, double (or deeper) percent encoding,
//     '+' for a space and a space for '+', JSON and C escapes (\/, \u002F,
//     \x2f), HTML character references (&#43;, &#x2b;, &plus;), any mix of
//     these within one secret, and base64 (a JWT payload quoting a key) —
//     and a secret cut short at the end of the text or before "…" or "..."
//     (a truncated snippet) loses what is left of it;
//   - by name (Names): the values of query parameters (separated by '&' or
//     ';', names and separators percent-encoded or not), JSON members, XML
//     elements and headers whose names carry credentials (key, serviceKey,
//     api_key, appsecret, token, signature, password, authorization, …),
//     bearer tokens and anything shaped like a JWT, for secrets nobody told
//     the redactor about.
//
// Text does both; URL redacts a URL structurally first (user info, query
// and fragment parameters, parameter values that hold an encoded URL of
// their own) and then as text.
package redact

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Marker replaces every secret.
const Marker = "REDACTED"

// MinSecretLen is the shortest value redacted by value: shorter strings
// would redact ordinary text and no real key is that short.
const MinSecretLen = 4

// minCutPrefix is how many bytes of a secret, cut off by the end of the
// text or an ellipsis, are enough to redact what is left of it.
const minCutPrefix = 6

// maxNameLookback bounds how far back a parameter or member name is
// looked for, so that redaction stays linear in the text.
const maxNameLookback = 256

// maxDepth bounds how many escapes may nest in one spelling of a byte
// (%2B is one, %252B two, \u0025252B three …).
const maxDepth = 4

// exactNames are parameter names (lower case) that always carry a secret.
var exactNames = map[string]bool{
	"key": true, "servicekey": true, "service_key": true, "api_key": true, "apikey": true,
	"appkey": true, "app_key": true, "appsecret": true, "app_secret": true, "secret": true,
	"secret_key": true, "access_key": true, "client_secret": true,
	"token": true, "access_token": true, "refresh_token": true, "authorization": true,
	"auth": true, "proxy-authorization": true, "sig": true,
}

// secretWords mark a name as secret when its lower-cased form, stripped
// of '_', '-' and '.', contains one of them. ("auth" alone is too common a
// part of harmless names, such as data.go.kr's returnAuthMsg.)
var secretWords = []string{"key", "token", "secret", "password", "passwd", "signature", "credential"}

var nameSeparators = strings.NewReplacer("_", "", "-", "", ".", "")

// SensitiveName reports whether a parameter, member, element or header of
// this name carries a secret: key, serviceKey, ServiceKey, api_key,
// appkey, appsecret, token, access_token, X-Amz-Signature, password,
// authorization and any name containing key, token, secret, password,
// passwd, signature or credential. The match ignores case.
func SensitiveName(name string) bool {
	n := strings.ToLower(name)
	if exactNames[n] {
		return true
	}
	n = nameSeparators.Replace(n)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Text redacts s by value (Values) and by name (Names).
func Text(s string, secrets ...string) string {
	return Names(Values(s, secrets...))
}

// URL returns u with its user-info password, the values of sensitive
// query and fragment parameters (and of parameters whose value is itself
// an encoded query holding one) and every known secret, in any spelling,
// replaced by Marker. Parameter order and spelling are kept otherwise. A
// URL that does not parse is redacted as text.
func URL(u string, secrets ...string) string {
	p, err := url.Parse(u)
	if err != nil {
		return Text(u, secrets...)
	}
	if p.User != nil {
		if _, has := p.User.Password(); has {
			p.User = url.UserPassword(p.User.Username(), Marker)
		}
	}
	if p.RawQuery != "" {
		p.RawQuery = Query(p.RawQuery)
	}
	if p.Fragment != "" {
		frag := p.EscapedFragment()
		if red := Query(frag); red != frag {
			if un, err := url.PathUnescape(red); err == nil {
				p.Fragment, p.RawFragment = un, red
			}
		}
	}
	return Text(p.String(), secrets...)
}

// Query redacts a raw query (or any name=value list separated by '&' or
// ';'): the value of every parameter whose name (percent-decoded, as often
// as it was encoded) is sensitive becomes Marker, and so does a value that,
// decoded, holds a sensitive parameter of its own (an encoded URL).
// Separators and other parameters are kept byte for byte.
func Query(q string) string {
	var b strings.Builder
	for q != "" {
		i := strings.IndexAny(q, "&;")
		part, sep := q, ""
		if i >= 0 {
			part, sep, q = q[:i], q[i:i+1], q[i+1:]
		} else {
			q = ""
		}
		b.WriteString(redactPair(part))
		b.WriteString(sep)
	}
	return b.String()
}

func redactPair(part string) string {
	name, value, ok := strings.Cut(part, "=")
	if !ok || value == "" {
		return part
	}
	if SensitiveName(unescapeAll(name)) {
		return name + "=" + Marker
	}
	if v := unescapeAll(value); v != value || strings.ContainsAny(v, "=") {
		if Names(v) != v {
			return name + "=" + Marker
		}
	}
	return part
}

// unescapeAll percent-decodes s until it no longer changes (at most
// maxDepth times), keeping the last form that decoded.
func unescapeAll(s string) string {
	for range maxDepth {
		u, err := url.QueryUnescape(s)
		if err != nil || u == s {
			return s
		}
		s = u
	}
	return s
}

// Values replaces every occurrence of each secret in s, in any spelling
// (see the package doc), with Marker. Secrets shorter than MinSecretLen
// are ignored; where secrets overlap the longest match wins.
func Values(s string, secrets ...string) string {
	if s == "" || len(secrets) == 0 {
		return s
	}
	secs := make([]string, 0, len(secrets))
	for _, sec := range secrets {
		if len(sec) >= MinSecretLen && !slices.Contains(secs, sec) {
			secs = append(secs, sec)
		}
	}
	if len(secs) == 0 {
		return s
	}
	t := newText(s)
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		end := -1
		for _, sec := range secs {
			if e := t.matchEnd(i, sec); e > end {
				end = e
			}
		}
		if end > i {
			b.WriteString(s[last:i])
			b.WriteString(Marker)
			i, last = end, end
			continue
		}
		i++
	}
	if last > 0 {
		b.WriteString(s[last:])
		s = b.String()
	}
	for _, sec := range secs {
		for _, f := range base64Forms(sec) {
			s = strings.ReplaceAll(s, f, Marker)
		}
	}
	return s
}

// glyph is one byte of decoded text and where its spelling ends.
type glyph struct {
	b   byte
	end int
}

// text reads the spellings in a string, decoding the escapes that start
// at a position once.
type text struct {
	s         string
	memo      map[int][]glyph
	cur, next []int
}

func newText(s string) *text { return &text{s: s} }

// matchEnd returns the end of the longest spelling of sec starting at
// start, or -1. A spelling cut off by the end of the text, or by an
// ellipsis, after at least minCutPrefix bytes of sec counts as a match up
// to the cut.
func (t *text) matchEnd(start int, sec string) int {
	t.cur = t.ends(start, sec[0], t.cur[:0])
	if len(t.cur) == 0 {
		return -1
	}
	for k := 1; k < len(sec); k++ {
		t.next = t.next[:0]
		for _, p := range t.cur {
			t.next = t.ends(p, sec[k], t.next)
		}
		if len(t.next) == 0 {
			if k >= minCutPrefix {
				for _, p := range t.cur {
					if p == len(t.s) || strings.HasPrefix(t.s[p:], "…") || strings.HasPrefix(t.s[p:], "...") {
						return p
					}
				}
			}
			return -1
		}
		slices.Sort(t.next)
		t.next = slices.Compact(t.next)
		t.cur, t.next = t.next, t.cur
	}
	return slices.Max(t.cur)
}

// ends appends to out the end of every spelling of byte c that starts at
// p.
func (t *text) ends(p int, c byte, out []int) []int {
	if p >= len(t.s) {
		return out
	}
	ch := t.s[p]
	if ch == c || sameWord(ch, c) {
		out = append(out, p+1)
	}
	if isEscapeStart(ch) {
		for _, g := range t.escapes(p) {
			if g.b == c || sameWord(g.b, c) {
				out = append(out, g.end)
			}
		}
	}
	return out
}

// escapesTo reports whether an escape starting at p spells exactly c.
func (t *text) escapesTo(p int, c byte) bool {
	if p >= len(t.s) || !isEscapeStart(t.s[p]) {
		return false
	}
	for _, g := range t.escapes(p) {
		if g.b == c {
			return true
		}
	}
	return false
}

// sameWord reports whether b may stand for c in a query: a '+' decoded as
// a space, or a space form-encoded as '+'.
func sameWord(b, c byte) bool { return b == ' ' && c == '+' || b == '+' && c == ' ' }

func isEscapeStart(c byte) bool { return c == '%' || c == '\\' || c == '&' }

// escapes returns every byte an escape starting at p spells and where it
// ends: percent escapes (%XX in either case, %uXXXX), backslash escapes
// (\/ \" \\ and any other punctuation, \uXXXX, \xXX) and HTML character
// references (&#43; &#x2B; &plus;), nested up to maxDepth deep — the
// escape's own first character may itself be escaped (%25 2B, \u0025 2B,
// &amp; #43;).
func (t *text) escapes(p int) []glyph {
	if g, ok := t.memo[p]; ok {
		return g
	}
	s := t.s
	var all []glyph
	frontier := []glyph{{s[p], p + 1}}
	for range maxDepth {
		var next []glyph
		for _, g := range frontier {
			q := g.end
			switch g.b {
			case '%':
				if v, e, ok := hexAt(s, q, 2); ok {
					next = append(next, glyph{byte(v), e})
				}
				if q < len(s) && (s[q] == 'u' || s[q] == 'U') {
					if v, e, ok := hexAt(s, q+1, 4); ok && v < utf8.RuneSelf {
						next = append(next, glyph{byte(v), e})
					}
				}
			case '\\':
				if q >= len(s) {
					continue
				}
				switch d := s[q]; {
				case d < utf8.RuneSelf && d > ' ' && !isAlnum(d):
					next = append(next, glyph{d, q + 1})
				case d == 'u' || d == 'U':
					if v, e, ok := hexAt(s, q+1, 4); ok && v < utf8.RuneSelf {
						next = append(next, glyph{byte(v), e})
					}
				case d == 'x' || d == 'X':
					if v, e, ok := hexAt(s, q+1, 2); ok {
						next = append(next, glyph{byte(v), e})
					}
				}
			case '&':
				if b, e, ok := htmlRef(s, q); ok {
					next = append(next, glyph{b, e})
				}
			}
		}
		frontier = frontier[:0]
		for _, g := range next {
			if !slices.Contains(all, g) {
				all = append(all, g)
				if isEscapeStart(g.b) {
					frontier = append(frontier, g)
				}
			}
		}
		if len(frontier) == 0 {
			break
		}
	}
	if t.memo == nil {
		t.memo = map[int][]glyph{}
	}
	t.memo[p] = all
	return all
}

// htmlNames are the named character references an HTML escaper uses for
// the punctuation found in keys.
var htmlNames = map[string]byte{
	"amp": '&', "lt": '<', "gt": '>', "quot": '"', "apos": '\'', "sol": '/', "plus": '+',
	"equals": '=', "percnt": '%', "num": '#', "quest": '?', "colon": ':', "semi": ';',
	"bsol": '\\', "period": '.', "lowbar": '_', "hyphen": '-', "dash": '-', "excl": '!',
	"comma": ',', "commat": '@', "dollar": '$', "ast": '*', "tilde": '~',
}

// htmlRef reads an ASCII character reference starting at q (just after
// its '&'): the byte it names and where it ends.
func htmlRef(s string, q int) (byte, int, bool) {
	if q >= len(s) {
		return 0, 0, false
	}
	if s[q] == '#' {
		q++
		base := 10
		if q < len(s) && (s[q] == 'x' || s[q] == 'X') {
			base, q = 16, q+1
		}
		v, n := 0, 0
		for q < len(s) && n < 8 {
			d := digitVal(s[q], base)
			if d < 0 {
				break
			}
			v, q, n = v*base+d, q+1, n+1
		}
		if n == 0 || v >= utf8.RuneSelf {
			return 0, 0, false
		}
		if q < len(s) && s[q] == ';' {
			q++
		}
		return byte(v), q, true
	}
	semi := strings.IndexByte(s[q:min(len(s), q+8)], ';')
	if semi <= 0 {
		return 0, 0, false
	}
	if b, ok := htmlNames[strings.ToLower(s[q:q+semi])]; ok {
		return b, q + semi + 1, true
	}
	return 0, 0, false
}

// hexAt reads n hex digits at q: their value and where they end.
func hexAt(s string, q, n int) (int, int, bool) {
	if q+n > len(s) {
		return 0, 0, false
	}
	v := 0
	for i := q; i < q+n; i++ {
		d := digitVal(s[i], 16)
		if d < 0 {
			return 0, 0, false
		}
		v = v*16 + d
	}
	return v, q + n, true
}

func digitVal(b byte, base int) int {
	var d int
	switch {
	case b >= '0' && b <= '9':
		d = int(b - '0')
	case b >= 'a' && b <= 'f':
		d = int(b-'a') + 10
	case b >= 'A' && b <= 'F':
		d = int(b-'A') + 10
	default:
		return -1
	}
	if d >= base {
		return -1
	}
	return d
}

func isAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// base64Forms returns the parts of sec's base64 encodings (standard and
// URL alphabets) that do not depend on what surrounds it, at each of the
// three byte alignments it can take inside a longer encoded text (a JWT
// payload quoting an access key). Secrets too short to leave a
// distinctive part give none.
func base64Forms(sec string) []string {
	if len(sec) < 12 {
		return nil
	}
	if f, ok := base64Cache.Load(sec); ok {
		return f.([]string)
	}
	out := computeBase64Forms(sec)
	if base64Count.Add(1) <= maxBase64Cache {
		base64Cache.Store(sec, out)
	}
	return out
}

// base64Cache keeps the base64 parts of the secrets seen (a process knows a
// handful of keys and one token per validity window); maxBase64Cache bounds
// it.
var (
	base64Cache sync.Map
	base64Count atomic.Int64
)

const maxBase64Cache = 1024

func computeBase64Forms(sec string) []string {
	var out []string
	for off := range 3 {
		buf := make([]byte, off+len(sec))
		copy(buf[off:], sec)
		// Character j covers bits [6j, 6j+6); keep those inside the secret.
		first := (8*off + 5) / 6
		last := (8*(off+len(sec)) - 6) / 6
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			e := enc.EncodeToString(buf)
			if last >= first && last < len(e) {
				if f := e[first : last+1]; !slices.Contains(out, f) {
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// Names redacts secrets by the name that carries them (see the package
// doc): parameter values after a sensitive name and '=' (spelled %3D or
// not), JSON members, XML elements and header lines of sensitive names,
// bearer tokens and JWTs.
func Names(s string) string {
	if s == "" {
		return s
	}
	if strings.IndexByte(s, '=') >= 0 || strings.IndexByte(s, '%') >= 0 || strings.IndexByte(s, '&') >= 0 || strings.IndexByte(s, '\\') >= 0 {
		s = redactParams(s)
	}
	if strings.Contains(s, `":`) || strings.Contains(s, `" :`) || strings.Contains(s, `\":`) {
		s = redactJSONMembers(s)
	}
	if strings.Contains(s, "</") {
		s = xmlElement.ReplaceAllStringFunc(s, redactXMLElement)
	}
	lower := strings.ToLower(s)
	if strings.IndexByte(s, ':') >= 0 && containsAny(lower, headerNames) {
		s = headerLine.ReplaceAllString(s, "${1}"+Marker)
	}
	if strings.Contains(lower, "bearer") {
		s = bearer.ReplaceAllString(s, "${1}"+Marker)
	}
	if strings.Contains(s, "eyJ") {
		s = jwtShape.ReplaceAllString(s, Marker)
	}
	return s
}

// redactXMLElement redacts the text of one matched element of a
// sensitive name.
func redactXMLElement(m string) string {
	sub := xmlElement.FindStringSubmatch(m)
	name := sub[1]
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		name = name[i+1:]
	}
	if sub[3] == "" || sub[3] == Marker || !SensitiveName(name) {
		return m
	}
	return "<" + sub[1] + sub[2] + ">" + Marker + "</"
}

// headerNames are the (lower-case) header names headerLine redacts.
var headerNames = []string{"authorization", "appkey", "appsecret", "api-key", "x-auth-token"}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

var (
	xmlElement = regexp.MustCompile(`<([A-Za-z_][\w.\-:]*)(\s[^<>]*)?>([^<]*)</`)
	headerLine = regexp.MustCompile(`(?i)(\b(?:authorization|proxy-authorization|appkey|appsecret|x-api-key|api-key|x-auth-token)\s*:\s*(?:(?:bearer|basic|token|digest)\s+)?)[^\s"',;<>]+`)
	bearer     = regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]{4,}=*`)
	jwtShape   = regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`)
)

// redactParams replaces the value after every sensitive name followed by
// '=' in any spelling (=, %3D, %253D, \u003d, &#61;).
func redactParams(s string) string {
	t := newText(s)
	var b strings.Builder
	last := 0
	for p := 0; p < len(s); p++ {
		switch s[p] {
		case '=', '%', '\\', '&':
		default:
			continue
		}
		if p < last {
			continue
		}
		ends := t.ends(p, '=', nil)
		if len(ends) == 0 {
			continue
		}
		if !SensitiveName(paramNameBefore(s[:p])) {
			continue
		}
		vs := slices.Max(ends)
		ve := t.valueEnd(vs)
		if ve == vs || s[vs:ve] == Marker {
			continue
		}
		b.WriteString(s[last:vs])
		b.WriteString(Marker)
		last = ve
		p = ve - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// paramNameBefore returns the parameter name that ends text: the run of
// name and escape characters before it, decoded, after its last
// separator.
func paramNameBefore(text string) string {
	i := len(text)
	for i > 0 && len(text)-i < maxNameLookback {
		c := text[i-1]
		if isAlnum(c) || c == '_' || c == '-' || c == '.' || c == '%' || c == '\\' {
			i--
			continue
		}
		break
	}
	name := unescapeAll(text[i:])
	name = jsonUnderscore.Replace(name)
	if j := strings.LastIndexAny(name, "?&;/= :\\\"'#"); j >= 0 {
		name = name[j+1:]
	}
	return name
}

var jsonUnderscore = strings.NewReplacer(`\u005f`, "_", `\u005F`, "_")

// valueEnd returns where a parameter value starting at vs ends: at a
// delimiter, at an escaped '&', ';' or '#', or at the end of s.
func (t *text) valueEnd(vs int) int {
	s := t.s
	for i := vs; i < len(s); i++ {
		switch c := s[i]; c {
		case '&', ';', '#', ' ', '\t', '\r', '\n', '"', '\'', '<', '>', ',', '(', ')', '[', ']', '{', '}', '|', '`':
			return i
		case '\\':
			// An escaped separator or quote ends the value (\u0026, \"); an
			// escaped character of the value (\/) does not.
			if i+1 < len(s) && strings.IndexByte("nrt", s[i+1]) >= 0 {
				return i
			}
			fallthrough
		case '%':
			for _, sep := range []byte{'&', ';', '#', ' ', '"', '\''} {
				if t.escapesTo(i, sep) {
					return i
				}
			}
		}
	}
	return len(s)
}

// redactJSONMembers replaces the string value of every member of a
// sensitive name in JSON text, also when the JSON is itself inside a JSON
// string (quotes escaped as \" or \\\").
func redactJSONMembers(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != ':' || i < last {
			continue
		}
		// "name" before the colon.
		j := i - 1
		for j >= 0 && (s[j] == ' ' || s[j] == '\t') {
			j--
		}
		if j < 0 || s[j] != '"' {
			continue
		}
		nameEnd := j
		bs := backslashesBefore(s, j)
		from := max(0, j-bs-maxNameLookback)
		k := strings.LastIndexByte(s[from:j-bs], '"')
		if k < 0 {
			continue
		}
		k += from
		name := strings.TrimRight(s[k+1:nameEnd-bs], `\`)
		if !SensitiveName(name) {
			continue
		}
		// "value" after it, quoted with as many backslashes as the name.
		v := i + 1
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
			v++
		}
		for n := 0; n < bs; n++ {
			if v >= len(s) || s[v] != '\\' {
				v = -1
				break
			}
			v++
		}
		if v < 0 || v >= len(s) || s[v] != '"' {
			continue
		}
		vs := v + 1
		ve := vs
		for ve < len(s) && (s[ve] != '"' || backslashesBefore(s, ve) != bs) {
			ve++
		}
		end := ve - bs // before the closing quote's own backslashes
		if end <= vs || s[vs:end] == Marker {
			continue
		}
		b.WriteString(s[last:vs])
		b.WriteString(Marker)
		last = end
		i = ve
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// backslashesBefore counts the backslashes right before s[i].
func backslashesBefore(s string, i int) int {
	n := 0
	for i-n-1 >= 0 && s[i-n-1] == '\\' {
		n++
	}
	return n
}

// Forms returns literal spellings of a secret, for tests that look for
// one in text: raw, query- and path-escaped in upper and lower case,
// escaped twice, with '+' and spaces swapped, JSON-escaped, and its
// base64 parts. Values redacts all of these and more.
func Forms(s string) []string {
	var forms []string
	add := func(f string) {
		if f != "" && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	add(s)
	for _, f := range []string{url.QueryEscape(s), url.PathEscape(s)} {
		add(f)
		add(lowerEscapes(f))
		add(url.QueryEscape(f))
	}
	add(strings.NewReplacer("+", " ", " ", "+").Replace(s))
	add(strings.ReplaceAll(s, "/", `\/`))
	for _, f := range base64Forms(s) {
		add(f)
	}
	return forms
}

// lowerEscapes lower-cases the hex digits of every percent escape.
func lowerEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1] = lowerHex(b[i+1])
			b[i+2] = lowerHex(b[i+2])
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}
