package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"
)

// The canaries: a data.go.kr-style decoding key (holding + / = and a
// space's stand-in) and a FRED-style key (lower-case hex only).
const (
	svcKey  = "ab+cd/ef==gh+ij/kl0123456789mnopqrstuvwxyz+/w=="
	fredKey = "canary0fred1key2abcdef0123456789"
)

func TestValuesSpellings(t *testing.T) {
	jsonEsc := func(s string) string { b, _ := json.Marshal(s); return strings.Trim(string(b), `"`) }
	cases := []struct{ name, text string }{
		{"raw", svcKey},
		{"query-escaped", url.QueryEscape(svcKey)},
		{"path-escaped", url.PathEscape(svcKey)},
		{"lower-case escapes", "ab%2bcd%2fef%3d%3dgh%2bij%2fkl0123456789mnopqrstuvwxyz%2b%2fw%3d%3d"},
		{"mixed-case escapes", "ab%2Bcd%2fef%3D%3dgh+ij/kl0123456789mnopqrstuvwxyz%2b/w=="},
		{"double-encoded", url.QueryEscape(url.QueryEscape(svcKey))},
		{"triple-encoded", url.QueryEscape(url.QueryEscape(url.QueryEscape(svcKey)))},
		{"plus decoded as space", strings.ReplaceAll(svcKey, "+", " ")},
		{"JSON-escaped slashes", strings.ReplaceAll(svcKey, "/", `\/`)},
		{"JSON-escaped twice", strings.ReplaceAll(svcKey, "/", `\\\/`)},
		{"JSON \\u escapes", strings.NewReplacer("+", `\u002b`, "/", `\u002F`, "=", `\u003d`).Replace(svcKey)},
		{"JSON of the query-escaped key", jsonEsc(url.QueryEscape(svcKey))},
		{"percent escape with a JSON-escaped percent", strings.ReplaceAll(url.QueryEscape(svcKey), "%", `\u0025`)},
		{"%u escapes", strings.NewReplacer("+", "%u002B", "/", "%u002f", "=", "%u003D").Replace(svcKey)},
		{"C hex escapes", strings.NewReplacer("+", `\x2b`, "/", `\x2F`, "=", `\x3d`).Replace(svcKey)},
		{"HTML numeric references", strings.NewReplacer("+", "&#43;", "/", "&#x2F;", "=", "&#61;").Replace(svcKey)},
		{"HTML named references", strings.NewReplacer("+", "&plus;", "/", "&sol;", "=", "&equals;").Replace(svcKey)},
		{"HTML-escaped twice", strings.NewReplacer("+", "&amp;#43;", "/", "&amp;sol;").Replace(svcKey)},
		{"HTML escaping of a query-escaped key", html.EscapeString(url.QueryEscape(svcKey))},
		{"cut by an ellipsis", svcKey[:20] + "…"},
		{"cut by three dots", url.QueryEscape(svcKey)[:25] + "..."},
		{"cut by the end of the text", svcKey[:12]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := "before " + c.text + " after"
			if strings.HasSuffix(c.name, "end of the text") {
				in = "before " + c.text
			}
			got := Values(in, svcKey)
			if !strings.HasPrefix(got, "before "+Marker) {
				t.Errorf("Values(%q)\n = %q, want the key redacted", in, got)
			}
			assertAbsent(t, got, svcKey)
		})
	}
}

func TestValuesBase64(t *testing.T) {
	// A UPBIT JWT payload quotes the access key; a provider echoing the
	// Authorization header would print it in base64url.
	key := "upbitAccessKey0123456789abcdefghijklmn"
	for off := range 3 {
		payload := fmt.Sprintf(`{"%s":"%s","nonce":"x"}`, strings.Repeat("a", off+10), key)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
			text := "echo " + enc.EncodeToString([]byte(payload))
			got := Values(text, key)
			if !strings.Contains(got, Marker) {
				t.Errorf("offset %d: base64 of the key not redacted: %q", off, got)
			}
		}
	}
}

func TestValuesKeepsOrdinaryText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a P b", "a P b"}, // too short to be a secret
		{"nothing here", "nothing here"},
		{"key=abcdefgh and abcd", "key=REDACTED and REDACTED"},
		{"100%25 sure, %2B", "100%25 sure, %2B"},
		{"half a key: canary0 and more", "half a key: canary0 and more"}, // a prefix not cut off is ordinary text
	} {
		if got := Values(tc.in, "abcd", "abcdefgh", "P", fredKey); got != tc.want {
			t.Errorf("Values(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"GET /fred?series_id=DGS10&api_key=0123&file_type=json", "GET /fred?series_id=DGS10&api_key=REDACTED&file_type=json"},
		{"u?a=1;serviceKey=x%2By;b=2", "u?a=1;serviceKey=REDACTED;b=2"},
		{"u?api%5Fkey=secretvalue&x=1", "u?api%5Fkey=REDACTED&x=1"},
		{"u?api_key%3Dsecretvalue%26x%3D1", "u?api_key%3DREDACTED%26x%3D1"},
		{"next=https%253A%252F%252Fh%252Fp%253Fapi_key%253Dsecret%2526x%253D1", "next=https%253A%252F%252Fh%252Fp%253Fapi_key%253DREDACTED%2526x%253D1"},
		{`{"url":"https:\/\/h\/p?api_key=abc\u0026x=1"}`, `{"url":"https:\/\/h\/p?api_key=REDACTED\u0026x=1"}`},
		{`{"grant_type":"client_credentials","appkey":"PSabc","appsecret" : "s3cr+/t=="}`, `{"grant_type":"client_credentials","appkey":"REDACTED","appsecret" : "REDACTED"}`},
		{`"{\"access_token\":\"eyJhbGciOi\",\"x\":1}"`, `"{\"access_token\":\"REDACTED\",\"x\":1}"`},
		{"<serviceKey>Ab+Cd/Ef==</serviceKey>", "<serviceKey>REDACTED</serviceKey>"},
		{"<returnAuthMsg>SERVICE_KEY_IS_NOT_REGISTERED_ERROR</returnAuthMsg>", "<returnAuthMsg>SERVICE_KEY_IS_NOT_REGISTERED_ERROR</returnAuthMsg>"},
		{"authorization: Bearer abc.def-ghi\nappkey: PSxyz\n", "authorization: Bearer REDACTED\nappkey: REDACTED\n"},
		{"sent Bearer 0123456789abcdef", "sent Bearer REDACTED"},
		{"jwt eyJhbGciOiJIUzUxMiJ9.eyJhY2Nlc3Nfa2V5IjoieCJ9.c2lnbmF0dXJl end", "jwt REDACTED end"},
		{"waiting for the kis token: context canceled", "waiting for the kis token: context canceled"},
		{"Bad Request.  The value for variable api_key is not registered.", "Bad Request.  The value for variable api_key is not registered."},
		{"pageNo=1&numOfRows=10", "pageNo=1&numOfRows=10"},
	} {
		if got := Names(tc.in); got != tc.want {
			t.Errorf("Names(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestURL(t *testing.T) {
	const ecosKey = "ECOSKEY0123456789ABCD"
	cases := []struct {
		in, want string
		secrets  []string
	}{
		{"https://api.stlouisfed.org/fred/series/observations?series_id=DGS10&api_key=abc123abc123&file_type=json",
			"https://api.stlouisfed.org/fred/series/observations?series_id=DGS10&api_key=REDACTED&file_type=json", nil},
		{"https://ecos.bok.or.kr/api/StatisticSearch/" + ecosKey + "/json/kr/1/10/722Y001/D/20240101/20240131/0101000",
			"https://ecos.bok.or.kr/api/StatisticSearch/REDACTED/json/kr/1/10/722Y001/D/20240101/20240131/0101000", []string{ecosKey}},
		{"https://apis.data.go.kr/x/y?serviceKey=Ab%2bCd%2fEf%3d%3dGh&pageNo=1", "https://apis.data.go.kr/x/y?serviceKey=REDACTED&pageNo=1", nil},
		{"http://h/p?a=1;token=abcd;b=2", "http://h/p?a=1;token=REDACTED;b=2", nil},
		{"http://h/p?next=" + url.QueryEscape("https://x/y?api_key=zzzz&q=1") + "&q=2", "http://h/p?next=REDACTED&q=2", nil},
		{"http://h/cb#access_token=abcd&state=1", "http://h/cb#access_token=REDACTED&state=1", nil},
		{"http://user:pw@h/p", "http://user:REDACTED@h/p", nil},
		{"http://h/p?q=" + svcKey, "http://h/p?q=REDACTED", []string{svcKey}},
	}
	for _, c := range cases {
		if got := URL(c.in, c.secrets...); got != c.want {
			t.Errorf("URL(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	got := URL("http://[::1%zz/p?api_key=abc&x="+ecosKey, ecosKey)
	if strings.Contains(got, "abc") || strings.Contains(got, ecosKey) {
		t.Errorf("unparsable URL not redacted: %q", got)
	}
}

// assertAbsent fails when text holds the secret in any of its literal
// forms, or any run of eight of its letters and digits (which every
// escape leaves as they are).
func assertAbsent(t *testing.T, text, secret string) {
	t.Helper()
	for _, f := range Forms(secret) {
		if strings.Contains(text, f) {
			t.Fatalf("%q survived as %q in %q", secret, f, text)
		}
	}
	for _, run := range alnumRuns(secret, 8) {
		if strings.Contains(text, run) {
			t.Fatalf("%q survived in part (%q) in %q", secret, run, text)
		}
	}
}

func alnumRuns(s string, n int) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && isAlnum(s[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= n {
			out = append(out, s[start:i])
		}
		start = -1
	}
	return out
}

// spellings are the ways encodeByte spells a byte, chosen by the fuzzer.
var spellings = []func(c byte) string{
	func(c byte) string { return string(c) },
	func(c byte) string { return fmt.Sprintf("%%%02X", c) },
	func(c byte) string { return fmt.Sprintf("%%%02x", c) },
	func(c byte) string { return fmt.Sprintf("%%25%02X", c) },
	func(c byte) string { return fmt.Sprintf("%%2525%02x", c) },
	func(c byte) string { return fmt.Sprintf(`\u%04x`, c) },
	func(c byte) string { return fmt.Sprintf(`\u%04X`, c) },
	func(c byte) string { return fmt.Sprintf("&#%d;", c) },
	func(c byte) string { return fmt.Sprintf("&#x%X;", c) },
	func(c byte) string { return fmt.Sprintf(`\u0025%02X`, c) },
	func(c byte) string {
		switch c {
		case '/':
			return `\/`
		case '+':
			return " "
		}
		return string(c)
	},
	func(c byte) string {
		if c == '/' {
			return `\\\/`
		}
		return url.QueryEscape(string(c))
	},
}

// encodeSecret spells each byte of secret the way the choice bytes say
// (cycling through them).
func encodeSecret(secret string, choice []byte) string {
	var b strings.Builder
	for i := 0; i < len(secret); i++ {
		k := 0
		if len(choice) > 0 {
			k = int(choice[i%len(choice)]) % len(spellings)
		}
		b.WriteString(spellings[k](secret[i]))
	}
	return b.String()
}

// FuzzValues: the canary, spelled any mix of ways and put between any two
// texts, never survives Values, Text or URL.
func FuzzValues(f *testing.F) {
	f.Add("GET /x?serviceKey=", "&pageNo=1 HTTP/1.1", []byte{0})
	f.Add(`{"error":"bad url https:\/\/h\/p?k=`, `"}`, []byte{1, 2, 3, 4, 5})
	f.Add("", "", []byte{6, 7, 8, 9, 10, 11})
	f.Add("%", "%2", []byte{3, 1, 4, 1, 5, 9, 2, 6})
	f.Add("&#", ";", []byte{10, 0, 10, 0})
	f.Fuzz(func(t *testing.T, before, after string, choice []byte) {
		for _, secret := range []string{svcKey, fredKey} {
			enc := encodeSecret(secret, choice)
			in := before + enc + after
			for name, got := range map[string]string{
				"Values": Values(in, secret),
				"Text":   Text(in, secret),
				"URL":    URL("http://h/p?q="+url.QueryEscape(in), secret),
			} {
				if strings.Contains(got, enc) {
					t.Fatalf("%s(%q): the spelling %q survived: %q", name, in, enc, got)
				}
				for _, form := range Forms(secret) {
					if strings.Contains(got, form) && !strings.Contains(before+after, form) {
						t.Fatalf("%s(%q): %q survived as %q: %q", name, in, secret, form, got)
					}
				}
			}
		}
	})
}

// FuzzNames: name-based redaction never panics, is stable, and leaves no
// value after a sensitive parameter name.
func FuzzNames(f *testing.F) {
	f.Add("https://h/p?api_key=abc&x=1")
	f.Add(`{"appsecret":"x\"y","k":1}`)
	f.Add(`\"token\":\"`)
	f.Add("<serviceKey a='1'>v</serviceKey>")
	f.Add("a=%3D%26;%")
	f.Fuzz(func(t *testing.T, s string) {
		once := Names(s)
		if twice := Names(once); twice != once {
			t.Fatalf("Names is not stable: %q -> %q -> %q", s, once, twice)
		}
		// Every parameter of a parsable URL whose name is sensitive reads
		// REDACTED (text that is not a URL follows its own delimiters).
		in := "http://h/p?" + s
		if _, err := url.Parse(in); err != nil {
			return
		}
		q := URL(in)
		p, err := url.Parse(q)
		if err != nil {
			t.Fatalf("URL(%q) = %q, which does not parse: %v", in, q, err)
		}
		for part := range strings.SplitSeq(p.RawQuery, "&") {
			for pair := range strings.SplitSeq(part, ";") {
				name, value, _ := strings.Cut(pair, "=")
				if n := unescapeAll(name); SensitiveName(n) && value != "" && value != Marker {
					t.Fatalf("URL(%q) = %q: %s not redacted", in, q, n)
				}
			}
		}
	})
}
