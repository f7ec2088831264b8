package connector_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// BenchmarkDoStream measures a whole exchange streaming bodies of growing
// size: bytes allocated per call must not grow with the body (nothing is
// buffered beyond the HeadSize peek and the transport's own buffers).
func BenchmarkDoStream(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20, 16 << 20} {
		body := append([]byte("{"), bytes.Repeat([]byte("x"), size-1)...)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		}))
		base, err := connector.NewBase(testProvider(), connector.Options{BaseURL: srv.URL,
			Credentials: connector.MapCredentials(map[string]string{"TEST_KEY": testKey})})
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 32<<10)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				resp, err := base.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData},
					URL: srv.URL + "/x", Classify: accept})
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, buf)
				resp.Body.Close()
				if err != nil || n != int64(size) {
					b.Fatalf("read %d bytes, %v", n, err)
				}
			}
		})
		srv.Close()
	}
}

// BenchmarkWalkJSONHead measures classifying a full 4 KiB head.
func BenchmarkWalkJSONHead(b *testing.B) {
	head := []byte(`{"rt_cd":"0","msg_cd":"MCA00000","msg1":"ok","output1":{"a":"1"},"output2":[`)
	for len(head) < connector.HeadSize {
		head = append(head, `{"stck_bsop_date":"20250131","bstp_nmix_prpr":"2517.37"},`...)
	}
	head = head[:connector.HeadSize]
	b.SetBytes(int64(len(head)))
	b.ReportAllocs()
	for b.Loop() {
		connector.WalkJSON(head, func(connector.JSONEvent) bool { return true })
	}
}

// BenchmarkDoGatedSmallAnswer measures the per-call cost of the boundary
// on a small answer: a URL and log line holding the key to redact, the
// gate's permit and its re-check once the connection is ready.
func BenchmarkDoGatedSmallAnswer(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"observations":[{"date":"2025-03-10","value":"4.21"}]}`))
	}))
	defer srv.Close()
	for _, gated := range []bool{false, true} {
		opts := connector.Options{BaseURL: srv.URL, Credentials: connector.MapCredentials(map[string]string{"TEST_KEY": testKey})}
		if gated {
			opts.Limiter = permit.Funcs{WaitFunc: func(context.Context, permit.Call) (permit.Permit, error) {
				return permit.Permit{Deadline: time.Now().Add(time.Minute)}, nil
			}}
		}
		base, err := connector.NewBase(testProvider(), opts)
		if err != nil {
			b.Fatal(err)
		}
		key, _ := base.Credential("api_key")
		b.Run(fmt.Sprintf("gated=%v", gated), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := base.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData},
					URL: base.URL("/fred/series/observations", "series_id=DGS10&api_key="+key+"&file_type=json"), Classify: accept})
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
