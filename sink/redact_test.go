package sink

import (
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://api.stlouisfed.org/fred/series/observations?series_id=DGS10&api_key=0123456789abcdef0123456789abcdef&file_type=json",
			"https://api.stlouisfed.org/fred/series/observations?series_id=DGS10&api_key=REDACTED&file_type=json"},
		{"https://apis.data.go.kr/1360000/Svc/get?serviceKey=abc%2Bdef%3D%3D&numOfRows=10&ServiceKey=x",
			"https://apis.data.go.kr/1360000/Svc/get?serviceKey=REDACTED&numOfRows=10&ServiceKey=REDACTED"},
		{"https://h/p?token=t&access_token=a&appsecret=s&appkey=k&X-Amz-Signature=sig&Authorization=b&market=KRW-BTC",
			"https://h/p?token=REDACTED&access_token=REDACTED&appsecret=REDACTED&appkey=REDACTED&X-Amz-Signature=REDACTED&Authorization=REDACTED&market=KRW-BTC"},
		{"https://user:pass@h/p#key=frag", "https://REDACTED@h/p"},
		{"https://h/p?flag&key", "https://h/p?flag&key"},
		{"https://ecos.bok.or.kr/api/StatisticSearch/REDACTED/json/kr/1/10/722Y001/D/20240101/20240131/0101000/?/?",
			"https://ecos.bok.or.kr/api/StatisticSearch/REDACTED/json/kr/1/10/722Y001/D/20240101/20240131/0101000/?/?"},
		{"", ""},
	} {
		got, ok := RedactURL(tc.in)
		if !ok || got != tc.want {
			t.Errorf("RedactURL(%q) =\n %q, %v\nwant\n %q", tc.in, got, ok, tc.want)
		}
	}
	if got, ok := RedactURL("http://[::1%zz/?api_key=secret"); ok || got != "" {
		t.Errorf("unparseable URL: RedactURL = %q, %v; want it dropped", got, ok)
	}
}

func TestCleanSourceURL(t *testing.T) {
	if got := cleanSourceURL("https://h/p?q=a\nb&key=secret"); strings.Contains(got, "secret") {
		t.Errorf("cleanSourceURL kept a secret of a URL with a control character: %q", got)
	}
	if got := cleanSourceURL("http://[bad/?key=secret"); strings.Contains(got, "secret") {
		t.Errorf("cleanSourceURL kept a secret of an unparseable URL: %q", got)
	}
	long := "https://h/p?q=" + strings.Repeat("x", 3000)
	if got := cleanSourceURL(long); len(got) != maxSourceURLLen || !strings.HasSuffix(got, "...") {
		t.Errorf("long URL cleaned to %d bytes, want %d ending in ...", len(got), maxSourceURLLen)
	}
	if got := cleanSourceURL("https://h/p?q=한국"); got != "https://h/p?q=%ED%95%9C%EA%B5%AD" {
		t.Errorf("non-ASCII URL cleaned to %q", got)
	}
}

func FuzzRedactURL(f *testing.F) {
	f.Add("https://api.stlouisfed.org/fred/series/observations?series_id=DGS10&api_key=abc")
	f.Add("https://u:p@h/p?serviceKey=a%2B%3D&x=1#f")
	f.Add("%zz?key=1")
	f.Fuzz(func(t *testing.T, raw string) {
		once, ok := RedactURL(raw)
		if !ok {
			if once != "" {
				t.Fatalf("unparseable %q returned %q", raw, once)
			}
			return
		}
		twice, ok := RedactURL(once)
		if !ok || twice != once {
			t.Fatalf("redaction is not stable: %q -> %q -> %q (%v)", raw, once, twice, ok)
		}
		if c := cleanSourceURL(raw); len(c) > maxSourceURLLen {
			t.Fatalf("cleanSourceURL returned %d bytes", len(c))
		}
	})
}

// TestRedactURLEncodings: parameters separated by ';', names
// percent-encoded (once or twice) and values that are an encoded URL of
// their own lose their secrets too.
func TestRedactURLEncodings(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://h/p?a=1;api_key=0123abcd;b=2", "https://h/p?a=1;api_key=REDACTED;b=2"},
		{"https://h/p?api%5Fkey=0123abcd&b=2", "https://h/p?api%5Fkey=REDACTED&b=2"},
		{"https://h/p?service%254Bey=0123abcd", "https://h/p?service%254Bey=REDACTED"},
		{"https://h/p?next=https%3A%2F%2Fx%2Fy%3FserviceKey%3Dab%252Bcd%26q%3D1&q=2", "https://h/p?next=REDACTED&q=2"},
		{"https://h/p?next=https%253A%252F%252Fx%252Fy%253Fapi_key%253Dabc&q=2", "https://h/p?next=REDACTED&q=2"},
	} {
		got, ok := RedactURL(tc.in)
		if !ok || got != tc.want {
			t.Errorf("RedactURL(%q) =\n %q, %v\nwant\n %q", tc.in, got, ok, tc.want)
		}
	}
}
