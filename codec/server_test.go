package codec

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
)

const uiOrigin = "http://127.0.0.1:8233"

func startHandler(t *testing.T, c *Codec, opts HandlerOptions) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Handler(c, opts))
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url string, body []byte, h map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// The SDK's own remote codec client (what the temporal CLI uses) speaks to
// the handler: encode and decode round-trip, under any path prefix.
func TestHandlerSpeaksTheRemoteCodecProtocol(t *testing.T) {
	c := mustCodec(t, testKey(1))
	srv := startHandler(t, c, HandlerOptions{})
	remote := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: srv.URL + "/default"})
	in := []*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`{"n":1}`)}}
	sealed, err := remote.Encode(in)
	if err != nil || string(sealed[0].Metadata[MetadataEncoding]) != EncodingEncrypted {
		t.Fatalf("remote encode: %v %v", sealed, err)
	}
	// What the endpoint sealed, the local codec opens, and the reverse.
	if out, err := c.Decode(sealed); err != nil || string(out[0].Data) != `{"n":1}` {
		t.Fatalf("local decode of remote encode: %v", err)
	}
	local, _ := c.Encode(in)
	out, err := remote.Decode(local)
	if err != nil || string(out[0].Data) != `{"n":1}` {
		t.Fatalf("remote decode: %v %v", out, err)
	}
}

func TestDecodeRedactsTokens(t *testing.T) {
	c := mustCodec(t, testKey(1))
	srv := startHandler(t, c, HandlerOptions{})
	dc := c.DataConverter()
	state, _ := dc.ToPayload(map[string]any{"token": map[string]any{"access_token": canary, "expires_at": "2026-01-02T00:00:00Z"},
		"list": []any{map[string]any{"AppSecret": "s3cr3t-value"}}})
	other, _ := dc.ToPayload("just a string")
	notJSON, _ := c.Encode([]*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`{"access_token":"` + canary)}})
	// A value followed by '}' and a second document: the decoder stops at
	// the first, which has nothing to redact; the whole must still go.
	trailing, _ := c.Encode([]*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`"a"}{"access_token":"` + canary + `"}`)}})
	body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{state, other, notJSON[0], trailing[0]}})
	resp := post(t, srv.URL+"/decode", body, nil)
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("decode: %d %s", resp.StatusCode, raw)
	}
	var out commonpb.Payloads
	if err := protojson.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	for i, p := range out.Payloads { // protojson carries data in base64: look at it decoded
		if bytes.Contains(p.GetData(), []byte(canary)) || bytes.Contains(p.GetData(), []byte("s3cr3t-value")) {
			t.Errorf("decoded payload %d shows a secret: %s", i, p.GetData())
		}
	}
	if len(out.Payloads) != 4 || !strings.Contains(string(out.Payloads[0].Data), `"expires_at":"2026-01-02T00:00:00Z"`) ||
		!strings.Contains(string(out.Payloads[0].Data), `"access_token":"REDACTED"`) {
		t.Errorf("decoded state: %s", out.Payloads[0].GetData())
	}
	if string(out.Payloads[1].Data) != `"just a string"` {
		t.Errorf("other payload: %s", out.Payloads[1].Data)
	}
	if string(out.Payloads[2].Data) != `"REDACTED"` || string(out.Payloads[3].Data) != `"REDACTED"` {
		t.Errorf("unparsable JSON payloads: %s, %s", out.Payloads[2].Data, out.Payloads[3].Data)
	}
}

func TestHandlerCORSAndAuth(t *testing.T) {
	c := mustCodec(t, testKey(1))
	srv := startHandler(t, c, HandlerOptions{AllowOrigin: AllowOrigins(uiOrigin + "/"), Token: "tok-123"})
	body, _ := protojson.Marshal(&commonpb.Payloads{})

	// The Web UI's preflight: allowed origin, custom headers.
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/decode", nil)
	req.Header.Set("Origin", uiOrigin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type,x-namespace")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != uiOrigin ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "X-Namespace") ||
		resp.Header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	for _, tc := range []struct {
		name string
		h    map[string]string
		want int
	}{
		{"other origin", map[string]string{"Origin": "https://evil.example", "Authorization": "Bearer tok-123"}, http.StatusForbidden},
		{"no token", map[string]string{"Origin": uiOrigin}, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer tok-124"}, http.StatusUnauthorized},
		{"short token", map[string]string{"Authorization": "Bearer tok-12"}, http.StatusUnauthorized},
		{"longer token", map[string]string{"Authorization": "Bearer tok-1234"}, http.StatusUnauthorized},
		{"empty token", map[string]string{"Authorization": "Bearer "}, http.StatusUnauthorized},
		{"bare scheme", map[string]string{"Authorization": "Bearer"}, http.StatusUnauthorized},
		{"basic auth", map[string]string{"Authorization": "Basic dG9rLTEyMw=="}, http.StatusUnauthorized},
		{"ui with token", map[string]string{"Origin": uiOrigin, "Authorization": "Bearer tok-123", "X-Namespace": "default"}, http.StatusOK},
		{"cli with token", map[string]string{"Authorization": "Bearer tok-123"}, http.StatusOK},
	} {
		resp := post(t, srv.URL+"/default/decode", body, tc.h)
		if resp.StatusCode != tc.want {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, b, tc.want)
		}
		if tc.h["Origin"] == "https://evil.example" && resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: CORS header given to a foreign origin", tc.name)
		}
	}
}

func TestHandlerRefusesBadRequests(t *testing.T) {
	c := mustCodec(t, testKey(1))
	srv := startHandler(t, c, HandlerOptions{})
	if resp, _ := http.Get(srv.URL + "/decode"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
	if resp := post(t, srv.URL+"/other", []byte("{}"), nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("other path: %d", resp.StatusCode)
	}
	if resp := post(t, srv.URL+"/decode", []byte("{not json"), nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad JSON: %d", resp.StatusCode)
	}
	big := append([]byte(`{"payloads":[{"data":"`), bytes.Repeat([]byte("A"), maxRequest)...)
	if resp := post(t, srv.URL+"/decode", big, nil); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body: %d", resp.StatusCode)
	}
	// A payload sealed with a key the ring lacks: 400 naming the key id.
	other := mustCodec(t, "gone:"+testKey(9))
	sealed, _ := other.Encode([]*commonpb.Payload{{Data: []byte(canary)}})
	body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: sealed})
	resp := post(t, srv.URL+"/decode", body, nil)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"gone"`) || strings.Contains(string(b), canary) {
		t.Errorf("unknown key: %d %s", resp.StatusCode, b)
	}
}

// FuzzRedactJSON: whatever JSON a payload holds, no secret field keeps a
// value after redaction, and the output is JSON.
func FuzzRedactJSON(f *testing.F) {
	for _, s := range []string{`{"access_token":"x"}`, `{"a":[{"ACCESS_TOKEN":"y"},{"b":{"appsecret":"z"}}]}`, `"s"`, `1`, `null`,
		`{"access_token":{"nested":"v"}}`, `{"access_token":""}`, `[`, `{"access_token":"x"} {"x":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, _, ok := redactJSON(data)
		if !ok {
			return
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("redacted output %q is not JSON: %v", out, err)
		}
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, y := range x {
					if slices.Contains(SecretFields, strings.ToLower(k)) {
						if s, isStr := y.(string); !(isStr && (s == Redacted || s == "")) {
							t.Fatalf("%s kept %v in %q", k, y, out)
						}
						continue
					}
					walk(y)
				}
			case []any:
				for _, y := range x {
					walk(y)
				}
			}
		}
		walk(v)
	})
}

// TestTokenComparedInConstantTime: the bearer token is compared with
// crypto/subtle, never with == or != (whose time tells how much of a guess
// was right).
func TestTokenComparedInConstantTime(t *testing.T) {
	src, err := os.ReadFile("server.go")
	if err != nil {
		t.Fatal(err)
	}
	code := string(src)
	if !strings.Contains(code, "subtle.ConstantTimeCompare([]byte(got), []byte(h.opts.Token))") {
		t.Error("the bearer token is not compared with subtle.ConstantTimeCompare")
	}
	if m := regexp.MustCompile(`\w\s*[!=]=\s*h\.opts\.Token|h\.opts\.Token\s*[!=]=\s*[^"\s]`).FindString(code); m != "" {
		t.Errorf("the token is compared with %q", m)
	}
}

// TestNewServerLimits: the codec endpoint's server bounds every timeout
// and the header size, not only the headers' read.
func TestNewServerLimits(t *testing.T) {
	s := NewServer(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Errorf("codec server limits: read header %s, read %s, write %s, idle %s, header bytes %d",
			s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
}
