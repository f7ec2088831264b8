package upbit

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
)

func head(status int, body string, h http.Header) connector.Head {
	if h == nil {
		h = http.Header{}
	}
	return connector.Head{Status: status, Header: h, Bytes: []byte(body), Complete: true, Format: "json",
		Now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Location: time.UTC}
}

// TestClassifyKeepsTheProvidersWords: UPBIT throttles with a plain-text
// body; its words used to be replaced by the status text, and a block
// time written in a plain 418 was lost.
func TestClassifyKeepsTheProvidersWords(t *testing.T) {
	v := Classify(head(429, "Too many API requests.", http.Header{"Remaining-Req": {"group=candles; min=1800; sec=0"}}))
	if v.Err == nil || v.Err.Class != connector.RateLimited || v.Err.Code != "429" ||
		v.Err.Message != "Too many API requests." || v.Err.RetryAfter != RateLimitWait {
		t.Errorf("plain 429: %+v", v.Err)
	}
	v = Classify(head(418, "IP blocked for 30 seconds", nil))
	if v.Err == nil || v.Err.Class != connector.Blocked || !v.Err.Until.Equal(time.Date(2025, 1, 1, 0, 0, 30, 0, time.UTC)) ||
		!strings.Contains(v.Err.Message, "30 seconds") {
		t.Errorf("plain 418: %+v", v.Err)
	}
	v = Classify(head(404, `{"error":{"name":404,"message":"Code not found"}}`, nil))
	if v.Err == nil || v.Err.Class != connector.BadRequest || v.Err.Code != "404" || v.Err.Message != "Code not found" {
		t.Errorf("wrong market: %+v", v.Err)
	}
}

// TestOriginGroupWaitsTenSeconds: requests with an Origin header are
// allowed one per ten seconds; a throttled one used to wait one.
func TestOriginGroupWaitsTenSeconds(t *testing.T) {
	v := Classify(head(429, "Too many API requests.", http.Header{"Remaining-Req": {"group=origin; min=1800; sec=0"}}))
	if v.Err == nil || v.Err.RetryAfter != OriginWait {
		t.Errorf("origin 429: %+v", v.Err)
	}
	if v.Remaining == nil || v.Remaining.Group != "origin" {
		t.Errorf("remaining %+v", v.Remaining)
	}
	v = Classify(head(429, "Too many API requests.", http.Header{"Remaining-Req": {"group=origin; min=1800; sec=0"}, "Retry-After": {"3"}}))
	if v.Err == nil || v.Err.RetryAfter != 3*time.Second {
		t.Errorf("Retry-After wins: %+v", v.Err)
	}
}

// TestUnsureAuthIsConfirmed: a 401 about one signed request is AuthFailed
// only once confirmed; one about the key is final. It used to be final
// for every 401.
func TestUnsureAuthIsConfirmed(t *testing.T) {
	for body, confirm := range map[string]int{
		`{"error":{"message":"Jwt의 query를 검증하는데 실패하였습니다.","name":"invalid_query_payload"}}`: connector.DefaultConfirm,
		`{"error":{"message":"이미 요청한 nonce값이 다시 사용되었습니다.","name":"nonce_used"}}`:            connector.DefaultConfirm,
		`Unauthorized`: connector.DefaultConfirm,
		`{"error":{"message":"Jwt 토큰 검증에 실패했습니다.","name":"jwt_verification"}}`:    0,
		`{"error":{"message":"API 키가 만료되었습니다.","name":"expired_access_key"}}`:     0,
		`{"error":{"message":"허용되지 않은 IP 주소입니다.","name":"no_authorization_i_p"}}`: 0,
	} {
		v := Classify(head(401, body, nil))
		if v.Err == nil || v.Err.Class != connector.AuthFailed || v.Err.Confirm != confirm {
			t.Errorf("%s: %+v, want AuthFailed with Confirm %d", body, v.Err, confirm)
		}
	}
}
