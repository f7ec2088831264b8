package simulator

import (
	"bytes"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// sampleRequests asks every provider once, returning the bodies.
func sampleRequests(h *harness) map[string][]byte {
	h.t.Helper()
	out := map[string][]byte{}
	tok := h.kisToken()
	out["kis"] = h.get(kisIndexQuery("0001", "20240101", "20250311"), h.kisHeaders(tok, "FHKUP03500100")).body
	out["ecos"] = h.ecos("json/kr/1/100/722Y001/D/20250101/20250331/0101000").body
	out["ecos-xml"] = h.ecos("xml/kr/1/100/901Y009/M/202001/202503/0").body
	out["fred"] = h.fred("&observation_start=2024-01-01").body
	out["upbit"] = h.get("/v1/candles/days?market=KRW-BTC&count=200", nil).body
	out["datago"] = h.datago(fscIndexPath, "resultType=json&basDt=20250310&numOfRows=1000").body
	h.clock.Advance(2 * time.Second)
	out["tour"] = h.datago("/B551011/KorService2/areaBasedList2", "_type=json&numOfRows=100&MobileOS=ETC&MobileApp=x").body
	return out
}

func TestSameRequestSameBytes(t *testing.T) {
	a := sampleRequests(newHarness(t, nil))
	b := sampleRequests(newHarness(t, nil))
	for k, body := range a {
		if len(body) < 500 {
			t.Errorf("%s: only %d bytes: %s", k, len(body), body)
		}
		if !bytes.Equal(body, b[k]) {
			t.Errorf("%s: two simulators with the same seed answered differently", k)
		}
	}
	c := sampleRequests(newHarness(t, func(o *Options) { o.Seed = 7 }))
	for _, k := range []string{"kis", "fred", "upbit", "datago"} {
		if bytes.Equal(a[k], c[k]) {
			t.Errorf("%s: a different seed gave the same bytes", k)
		}
	}
}

// TestCompressionIsRealistic checks that synthetic payloads compress like
// real ones (the seed pipeline saw about 6× with zstd level 3 on a KIS
// index page), so lake size figures mean something.
func TestCompressionIsRealistic(t *testing.T) {
	h := newHarness(t, nil)
	tok := h.kisToken()
	body := h.get(kisIndexQuery("0001", "20241201", "20250311"), h.kisHeaders(tok, "FHKUP03500100")).body
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	compressed := enc.EncodeAll(body, nil)
	ratio := float64(len(body)) / float64(len(compressed))
	t.Logf("KIS 50-row page: %d bytes, zstd %d bytes, %.1f×", len(body), len(compressed), ratio)
	if len(body) < 5000 || len(body) > 20000 {
		t.Errorf("a 50-row KIS page is %d bytes; real ones are about 10 KB", len(body))
	}
	if ratio < 3 || ratio > 12 {
		t.Errorf("compression ratio %.1f× is far from the ~6× of real KIS pages", ratio)
	}
}
