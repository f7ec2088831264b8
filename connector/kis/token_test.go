package kis

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseTokenAnswer(t *testing.T) {
	now := time.Date(2024, 3, 11, 8, 18, 47, 0, time.UTC) // 17:18:47 KST
	tok, ok := parseTokenAnswer([]byte(`{"access_token":"eyJ0","access_token_token_expired":"2024-03-12 02:18:47","token_type":"Bearer","expires_in":86400}`), now)
	if !ok || tok.AccessToken != "eyJ0" || !tok.IssuedAt.Equal(now) || !tok.ExpiresAt.Equal(now.Add(9*time.Hour)) {
		t.Errorf("KIS answer: %+v %v", tok, ok)
	}
	for _, bad := range []string{``, `null`, `[]`, `{}`, `{"access_token":""}`, `{"access_token":`, `<html>`, `{"access_token":1}`} {
		if tok, ok := parseTokenAnswer([]byte(bad), now); ok {
			t.Errorf("parseTokenAnswer(%q) = %+v, want not ok", bad, tok)
		}
	}
	// An expires_in too large for a time.Duration used to wrap to an
	// expiry in the past; it now falls back to a day.
	tok, ok = parseTokenAnswer([]byte(`{"access_token":"x","expires_in":9999999999}`), now)
	if !ok || !tok.ExpiresAt.Equal(now.Add(defaultLifetime)) {
		t.Errorf("huge expires_in: expires %v, want %v", tok.ExpiresAt, now.Add(defaultLifetime))
	}
}

// FuzzParseTokenAnswer: no answer panics the parser; an accepted answer
// has a token issued now, and expires in the past only when its own
// access_token_token_expired or a non-positive expires_in says so.
func FuzzParseTokenAnswer(f *testing.F) {
	for _, s := range []string{
		`{"access_token":"eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzUxMiJ9.e30.sig","access_token_token_expired":"2024-03-12 02:18:47","token_type":"Bearer","expires_in":86400}`,
		`{"access_token":"x","access_token_token_expired":" 2024-03-12 02:18:47 "}`,
		`{"access_token":"x","access_token_token_expired":"2024-13-45 99:99:99","expires_in":3600}`,
		`{"access_token":"x","access_token_token_expired":"0001-01-01 00:00:00"}`,
		`{"access_token":"x","expires_in":"86400"}`,
		`{"access_token":"x","expires_in":-5}`,
		`{"access_token":"x","expires_in":1e400}`,
		`{"access_token":"x","expires_in":9223372036854775807}`,
		`{"access_token":"x","expires_in":99999999999999999999999}`,
		`{"access_token":"x","expires_in":0.5}`,
		`{"error_code":"EGW00133","error_description":"접근토큰 발급 잠시 후 다시 시도하세요(1분당 1회)"}`,
		`{"access_token":`, `null`, ``, `[]`, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, ok := parseTokenAnswer(data, now)
		if !ok {
			return
		}
		if tok.AccessToken == "" || !tok.IssuedAt.Equal(now) {
			t.Fatalf("accepted %q as %+v", data, tok)
		}
		if tok.ExpiresAt.After(now) {
			return
		}
		var a struct {
			Expired   string      `json:"access_token_token_expired"`
			ExpiresIn json.Number `json:"expires_in"`
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		_ = dec.Decode(&a)
		if n, err := strconv.ParseInt(a.ExpiresIn.String(), 10, 64); err == nil && n <= 0 {
			return
		}
		if _, err := time.ParseInLocation(time.DateTime, strings.TrimSpace(a.Expired), kst); err != nil {
			t.Fatalf("%q expires at %v, not after now, without saying so", data, tok.ExpiresAt)
		}
	})
}
