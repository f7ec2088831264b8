package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sluicehq/sluice/codec"
)

func TestCodecKeygen(t *testing.T) {
	clearTemporalEnv(t)
	out, err := runSluice(context.Background(), "codec", "keygen")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := codec.ParseKeyring("stdout", out); err != nil {
		t.Errorf("keygen printed no key: %q: %v", out, err)
	}
	path := filepath.Join(t.TempDir(), "codec.key")
	if out, err := runSluice(context.Background(), "codec", "keygen", "--out", path); err != nil || !strings.Contains(out, "key id k") {
		t.Fatalf("keygen --out: %v %s", err, out)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v", st.Mode().Perm())
	}
	if _, err := runSluice(context.Background(), "codec", "keygen", "--out", path); err == nil || !strings.Contains(err.Error(), "not overwriting") {
		t.Errorf("keygen over an existing ring: %v", err)
	}
}

func TestCodecServe(t *testing.T) {
	clearTemporalEnv(t)
	key, _ := codec.NewKey()
	t.Setenv(codec.EnvKey, "test:"+key)
	if _, err := runSluice(context.Background(), "codec", "serve", "--addr", "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "without a bearer token") {
		t.Fatalf("serving off loopback without a token: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCmd()
	var out syncBuffer
	root.SetOut(&out)
	root.SetArgs([]string{"codec", "serve", "--addr", "127.0.0.1:0"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	urlRe := regexp.MustCompile(`Codec\s+(http://127\.0\.0\.1:\d+)`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; {
		if m := urlRe.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no address printed: %q", out.String())
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	ring, _ := codec.ParseKeyring("test", "test:"+key)
	c, _ := codec.New(ring)
	sealed, _ := c.DataConverter().ToPayload(map[string]string{"access_token": "tok-canary", "note": "hello"})
	body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{sealed}})
	req, _ := http.NewRequest(http.MethodPost, base+"/default/decode", bytes.NewReader(body))
	req.Header.Set("Origin", "http://localhost:8233") // the compose Web UI, allowed by default
	req.Header.Set("X-Namespace", "default")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:8233" {
		t.Fatalf("decode: %d %v %s", resp.StatusCode, resp.Header, data)
	}
	var dec commonpb.Payloads
	if err := protojson.Unmarshal(data, &dec); err != nil || len(dec.Payloads) != 1 {
		t.Fatal(err)
	}
	if got := string(dec.Payloads[0].Data); !strings.Contains(got, `"note":"hello"`) || strings.Contains(got, "tok-canary") {
		t.Errorf("decoded %s", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

func TestWorkerTokenStoreChoice(t *testing.T) {
	clearTemporalEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--token-store", "keeper"}, codec.EnvKey},
		{[]string{"--token-store", "redis"}, `--token-store "redis": want keeper, file or auto`},
		{[]string{"--codec-key-file", "/nonexistent/codec.key"}, "/nonexistent/codec.key"},
	} {
		out, err := runSluice(context.Background(), append([]string{"worker", "--data-dir", t.TempDir(), "--metrics-addr", "", "--temporal", "127.0.0.1:1"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("worker %v: %v, want %q\n%s", tc.args, err, tc.want, out)
		}
	}
}

// TestCodecServerLimits: the codec endpoint's server bounds the whole
// request, the answer, idle connections and the header size, not only the
// headers' read (a body that never finishes held a connection forever).
func TestCodecServerLimits(t *testing.T) {
	ring, err := codec.ParseKeyring("test", "a:"+strings.Repeat("A", 43)+"=")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := startCodecServer("127.0.0.1:0", ring, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Close)
	s := cs.srv
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Errorf("codec server limits: read header %s, read %s, write %s, idle %s, header bytes %d",
			s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
}
