package upbit

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

func TestParseRemainingReq(t *testing.T) {
	good := map[string]RemainingReq{
		"group=candles; min=1800; sec=9":             {Group: "candles", Sec: 9, Min: 1800, HasMin: true},
		"group=order-cancel-all; min=60; sec=0":      {Group: "order-cancel-all", Sec: 0, Min: 60, HasMin: true},
		"sec=29;group=default":                       {Group: "default", Sec: 29},
		" GROUP = market ;SEC= 4 ; min=599; x=y ":    {Group: "market", Sec: 4, Min: 599, HasMin: true},
		"group=status-wallet; min=1800; sec=9;":      {Group: "status-wallet", Sec: 9, Min: 1800, HasMin: true},
		"group=crix-trades-ticks; min=600; sec=9999": {Group: "crix-trades-ticks", Sec: 9999, Min: 600, HasMin: true},
	}
	for in, want := range good {
		got, err := ParseRemainingReq(in)
		if err != nil || got != want {
			t.Errorf("ParseRemainingReq(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "group=candles", "sec=1", "group=candles; sec=-1", "group=candles; sec=x", "group=; sec=1", "group=a b; sec=1", "candles 9"} {
		if _, err := ParseRemainingReq(in); err == nil {
			t.Errorf("ParseRemainingReq(%q) succeeded", in)
		}
	}
}

func TestBlockFromMessage(t *testing.T) {
	h := connector.Head{Status: 418, Header: http.Header{}, Now: time.Unix(0, 0),
		Bytes: []byte(`{"error":{"name":"blocked","message":"IP 차단: 120초 후 해제"}}`), Complete: true}
	v := Classify(h)
	if v.Err == nil || v.Err.Class != connector.Blocked || !v.Err.Until.Equal(time.Unix(120, 0)) {
		t.Errorf("418 with a time in the message: %+v", v.Err)
	}
	h.Bytes = []byte(`{}`)
	v = Classify(h)
	if !v.Err.Until.Equal(time.Unix(0, 0).Add(DefaultBlock)) {
		t.Errorf("418 without a time: %+v", v.Err)
	}
}

func FuzzParseRemainingReq(f *testing.F) {
	for _, s := range []string{"group=candles; min=1800; sec=9", "group=order-cancel-all; sec=0", ";;;", "=", "group==; sec=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRemainingReq(s)
		if err == nil && (r.Group == "" || r.Sec < 0 || r.Min < 0) {
			t.Fatalf("accepted %q as %+v", s, r)
		}
	})
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{`[]`, `[{"market":"KRW-BTC"}]`, `{"error":{"name":"too_many_requests","message":"x"}}`, `{"error":`, ``, `<x>`} {
		f.Add(200, []byte(s), "")
		f.Add(429, []byte(s), "3")
		f.Add(418, []byte(s), "Wed, 21 Oct 2015 07:28:00 GMT")
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, retryAfter string) {
		h := connector.Head{Status: status, Header: http.Header{"Retry-After": {retryAfter}}, Bytes: body, Complete: true, Now: time.Unix(1e9, 0)}
		v := Classify(h)
		if v.Err != nil && v.Err.Class == 0 {
			t.Fatalf("unclassified error %+v", v.Err)
		}
		if status == 418 && (v.Err == nil || v.Err.Class != connector.Blocked || v.Err.Until.Before(h.Now)) {
			t.Fatalf("418 not blocked into the future: %+v", v.Err)
		}
		if v.Err != nil && (v.Err.Until.After(h.Now.Add(connector.MaxWait)) || v.Err.RetryAfter > connector.MaxWait) {
			t.Fatalf("a wait beyond connector.MaxWait: %+v", v.Err)
		}
	})
}

// TestBlockIsCapped: a 418 whose Retry-After is an HTTP date centuries
// ahead, or whose message names a huge block time, blocks for at most
// connector.MaxWait, not until then.
func TestBlockIsCapped(t *testing.T) {
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for name, h := range map[string]connector.Head{
		"http date": {Status: 418, Header: http.Header{"Retry-After": {"Fri, 31 Dec 2999 23:59:59 GMT"}}, Now: now, Bytes: []byte(`{}`), Complete: true},
		"seconds":   {Status: 418, Header: http.Header{"Retry-After": {"99999999999"}}, Now: now, Bytes: []byte(`{}`), Complete: true},
		"message": {Status: 418, Header: http.Header{}, Now: now, Complete: true,
			Bytes: []byte(`{"error":{"name":"blocked","message":"IP 차단: 999999초 후 해제"}}`)},
	} {
		v := Classify(h)
		if v.Err == nil || v.Err.Class != connector.Blocked || !v.Err.Until.Equal(now.Add(connector.MaxWait)) {
			t.Errorf("%s: %+v, want blocked until %v", name, v.Err, now.Add(connector.MaxWait))
		}
	}
	h := connector.Head{Status: 429, Header: http.Header{"Retry-After": {"Fri, 31 Dec 2999 23:59:59 GMT"}}, Now: now, Bytes: []byte(`{}`), Complete: true}
	if v := Classify(h); v.Err == nil || v.Err.RetryAfter != connector.MaxWait {
		t.Errorf("429 with a far HTTP date: %+v", v.Err)
	}
}

// TestClassifyReportsBoundedRemaining: Remaining-Req becomes the verdict's
// Remaining, with a group from UPBIT's documented list; any other group
// name (provider-controlled) is reported as "other".
func TestClassifyReportsBoundedRemaining(t *testing.T) {
	for hdr, want := range map[string]*permit.Remaining{
		"group=candles; min=1800; sec=9":                {Group: "candles", Left: 9, Window: time.Second},
		"group=ORDERBOOK; sec=3":                        {Group: "orderbook", Left: 3, Window: time.Second},
		"group=x-1f3a9c; sec=4":                         {Group: "other", Left: 4, Window: time.Second},
		"group=" + strings.Repeat("z", 500) + "; sec=1": {Group: "other", Left: 1, Window: time.Second},
		"garbage": nil,
	} {
		v := Classify(connector.Head{Status: 200, Header: http.Header{"Remaining-Req": {hdr}}, Bytes: []byte(`[{"market":"KRW-BTC"}]`), Now: time.Unix(0, 0)})
		if (v.Remaining == nil) != (want == nil) || (want != nil && *v.Remaining != *want) {
			t.Errorf("Remaining-Req %.40q: %+v, want %+v", hdr, v.Remaining, want)
		}
	}
}
