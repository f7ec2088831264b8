package notify

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzParse: a notifications file never panics the parser, and an error
// never carries a secret's value.
func FuzzParse(f *testing.F) {
	f.Add("group_seconds: 30\nsinks:\n  - {name: ops, type: webhook, url_env: HOOK_URL, key_env: HOOK_KEY}\n")
	f.Add("sinks:\n  - {name: s, type: slack, url_env: HOOK_URL}\n")
	f.Add("sinks: [{name: x, type: webhook, url_env: NOPE}]")
	f.Add("group_seconds: -5")
	f.Add(": [")
	const secret = "https://hooks.example.test/T0/canary-secret"
	lookup := func(name string) (string, error) {
		if name == "HOOK_URL" || name == "HOOK_KEY" {
			return secret, nil
		}
		return "", fmt.Errorf("set %s or %s_FILE", name, name)
	}
	f.Fuzz(func(t *testing.T, data string) {
		cfg, err := Parse("n.yaml", []byte(data), lookup)
		if err != nil {
			if strings.Contains(err.Error(), "canary-secret") {
				t.Fatalf("error leaks the secret: %v", err)
			}
			return
		}
		for _, s := range cfg.Sinks {
			if s.Name == "" || (s.Type != WebhookSink && s.Type != SlackSink) || s.URL == "" {
				t.Fatalf("accepted sink %+v", s)
			}
		}
	})
}

// FuzzVerify: verification never panics, and never accepts a signature
// it did not make for that body.
func FuzzVerify(f *testing.F) {
	now := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	f.Add("1796605200", "sha256=00", []byte(`{"id":"x"}`))
	f.Add("x", "", []byte{})
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, sig)
		if err := Verify([]byte("k"), h, body, now, 0); err == nil {
			var secs int64
			fmt.Sscan(ts, &secs)
			if sig != Sign([]byte("k"), time.Unix(secs, 0), body) {
				t.Fatalf("accepted a foreign signature %q", sig)
			}
		}
	})
}
