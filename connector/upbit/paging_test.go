package upbit

import (
	"strings"
	"testing"
	"time"
)

func TestCandleCounter(t *testing.T) {
	body := `[{"market":"KRW-BTC","candle_date_time_utc":"2024-01-03T00:00:00","note":"a \"{quoted}\" [brace] \\"},` +
		`{"market":"KRW-BTC","candle_date_time_utc":"2024-01-02T00:00:00","nested":{"x":[{"y":1}]}},` +
		`{"market":"KRW-BTC","candle_date_time_utc":"2024-01-01T00:00:00"}]`
	for _, chunk := range []int{1, 7, len(body)} {
		c := &candleCounter{}
		for i := 0; i < len(body); i += chunk {
			_, _ = c.Write([]byte(body[i:min(i+chunk, len(body))]))
		}
		if c.n != 3 {
			t.Errorf("chunks of %d: %d candles, want 3", chunk, c.n)
		}
	}
	if got, ok := oldestCandle([]byte(body)); !ok || !got.Equal(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("oldest candle %v %v", got, ok)
	}
	if _, ok := oldestCandle([]byte(`[]`)); ok {
		t.Error("an empty page has an oldest candle")
	}
}

func TestCursorWindow(t *testing.T) {
	from := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	to, n, err := cursorWindow(from, "2024-01-11T00:00:00Z")
	if err != nil || n != 10 || !to.Equal(time.Date(2024, 1, 11, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("ten days: %v %d %v", to, n, err)
	}
	if _, n, _ := cursorWindow(from, "2025-01-11T00:00:00Z"); n != MaxCount {
		t.Errorf("a long way back asks %d, want %d", n, MaxCount)
	}
	for _, bad := range []string{"2024-01-01T00:00:00Z", "2023-12-01T00:00:00Z", "yesterday", ""} {
		if _, _, err := cursorWindow(from, bad); err == nil || !strings.Contains(err.Error(), "cursor") {
			t.Errorf("cursor %q: %v", bad, err)
		}
	}
}

func FuzzCandlePage(f *testing.F) {
	f.Add([]byte(`[{"candle_date_time_utc":"2024-01-01T00:00:00"}]`))
	f.Add([]byte(`[{"a":"\"}{"},{]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &candleCounter{}
		_, _ = c.Write(b)
		if c.n < 0 || c.n > len(b) {
			t.Errorf("%d candles in %d bytes", c.n, len(b))
		}
		_, _ = oldestCandle(b)
	})
}
