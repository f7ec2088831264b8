package connector

import (
	"net/url"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	const ecosKey = "ECOSKEY0123456789ABCD"
	const svc = "Ab+Cd/Ef==Gh"
	cases := []struct {
		in, want string
		secrets  []string
	}{
		{"https://api.stlouisfed.org/fred/series/observations?series_id=DGS10&api_key=abc123abc123&file_type=json",
			"https://api.stlouisfed.org/fred/series/observations?series_id=DGS10&api_key=REDACTED&file_type=json", nil},
		{"https://ecos.bok.or.kr/api/StatisticSearch/" + ecosKey + "/json/kr/1/10/722Y001/D/20240101/20240131/0101000",
			"https://ecos.bok.or.kr/api/StatisticSearch/REDACTED/json/kr/1/10/722Y001/D/20240101/20240131/0101000", []string{ecosKey}},
		{"https://apis.data.go.kr/x/y?serviceKey=Ab%2BCd%2FEf%3D%3DGh&pageNo=1",
			"https://apis.data.go.kr/x/y?serviceKey=REDACTED&pageNo=1", []string{svc}},
		{"https://apis.data.go.kr/x/y?ServiceKey=whatever&numOfRows=10",
			"https://apis.data.go.kr/x/y?ServiceKey=REDACTED&numOfRows=10", nil},
		{"http://h/p?appkey=A&appsecret=B&token=C&access_token=D&key=E&x=1",
			"http://h/p?appkey=REDACTED&appsecret=REDACTED&token=REDACTED&access_token=REDACTED&key=REDACTED&x=1", nil},
		// A secret elsewhere (a param of another name) is still redacted.
		{"http://h/p?q=" + svc, "http://h/p?q=REDACTED", []string{svc}},
		{"http://user:pw@h/p", "http://user:REDACTED@h/p", nil},
	}
	for _, c := range cases {
		if got := RedactURL(c.in, c.secrets...); got != c.want {
			t.Errorf("RedactURL(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	// Unparsable URLs still lose sensitive parameters and secrets.
	got := RedactURL("http://[::1%zz/p?api_key=abc&x="+ecosKey, ecosKey)
	if strings.Contains(got, "abc") || strings.Contains(got, ecosKey) {
		t.Errorf("unparsable URL not redacted: %q", got)
	}
}

func TestRedactIgnoresShortSecretsAndPrefersLongest(t *testing.T) {
	if got := Redact("a P b", "P"); got != "a P b" {
		t.Errorf("short secret redacted: %q", got)
	}
	if got := Redact("key=abcdefgh", "abcd", "abcdefgh"); got != "key=REDACTED" {
		t.Errorf("Redact = %q", got)
	}
	var s Secrets
	s.Add("", "ab", "tokentokentoken", "tokentokentoken")
	if len(s.Values()) != 1 {
		t.Errorf("Secrets = %v", s.Values())
	}
	if got := s.Redact("Bearer tokentokentoken"); got != "Bearer REDACTED" {
		t.Errorf("Secrets.Redact = %q", got)
	}
}

func FuzzRedactURL(f *testing.F) {
	f.Add("https://apis.data.go.kr/x?serviceKey=Ab%2BCd&pageNo=1", "Ab+Cd")
	f.Add("https://ecos.bok.or.kr/api/StatisticSearch/KEY1234/json", "KEY1234")
	f.Add("http://[::1%zz/p?api_key=1", "")
	f.Add("%%%?&&==#", "====")
	f.Fuzz(func(t *testing.T, u, secret string) {
		out := RedactURL(u, secret)
		// Every sensitive parameter with a value in the output's query
		// ('&' or ';' separated) reads REDACTED.
		noFrag, _, _ := strings.Cut(out, "#")
		_, q, ok := strings.Cut(noFrag, "?")
		if !ok {
			return
		}
		if _, err := url.Parse(u); err != nil {
			return // redacted as text, by its own delimiters
		}
		for part := range strings.SplitSeq(strings.ReplaceAll(q, ";", "&"), "&") {
			name, value, _ := strings.Cut(part, "=")
			if n, err := url.QueryUnescape(name); err == nil && SensitiveParam(n) && value != "" && value != Redacted {
				t.Errorf("RedactURL(%q) = %q: %s not redacted", u, out, n)
			}
		}
	})
}

// TestRedactSpellings: the data.go.kr-shaped key (+ / =) is redacted in
// the spellings an echoing provider or a log produces, and sensitive
// parameters are found behind ';' and encoded names.
func TestRedactSpellings(t *testing.T) {
	key := "Ab+Cd/Ef==Gh+Ij/Kl0123456789mnopQRSTuvwxyzABCDEFGHIJ+/KLMNOP=="
	var sec Secrets
	sec.Add(key)
	lower := strings.NewReplacer("%2B", "%2b", "%2F", "%2f", "%3D", "%3d").Replace(url.QueryEscape(key))
	for name, text := range map[string]string{
		"lower-case escapes":    "echo " + lower + " end",
		"double encoding":       "echo " + url.QueryEscape(url.QueryEscape(key)) + " end",
		"plus as space":         "echo " + strings.ReplaceAll(key, "+", " ") + " end",
		"JSON-escaped slashes":  `{"msg":"` + strings.ReplaceAll(key, "/", `\/`) + `"}`,
		"JSON \\u escapes":      `{"msg":"` + strings.NewReplacer("+", `\u002b`, "/", `\u002f`).Replace(key) + `"}`,
		"cut snippet":           "echo " + key[:30] + "…",
		"HTML-escaped":          "<p>" + strings.ReplaceAll(key, "+", "&#43;") + "</p>",
		"query-escaped lowered": "GET /x?serviceKey=" + lower + "&pageNo=1",
	} {
		got := sec.Redact(text)
		if !strings.Contains(got, Redacted) {
			t.Errorf("%s: nothing redacted in %q", name, got)
		}
		for _, run := range []string{"Kl0123456789mnop", "KLMNOP", "Ij/Kl", "Ab+Cd"} {
			if strings.Contains(got, run) {
				t.Errorf("%s: %q left in %q", name, run, got)
			}
		}
	}
	for in, want := range map[string]string{
		"http://h/p?a=1;serviceKey=whatever;b=2": "http://h/p?a=1;serviceKey=REDACTED;b=2",
		"http://h/p?api%5Fkey=whatever&b=2":      "http://h/p?api%5Fkey=REDACTED&b=2",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
