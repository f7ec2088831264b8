package connector_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

// gzipBomb is a gzip stream that expands to 256 MiB: a member holding the
// start of a JSON document, then 256 members of a MiB of 'a' each. Go's
// gzip reader reads concatenated members as one stream, as the transport's
// does; the whole is about 260 KB on the wire.
func gzipBomb(t testing.TB) []byte {
	t.Helper()
	member := func(b []byte) []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	out := member([]byte(`{"rows":"`))
	mib := member(bytes.Repeat([]byte{'a'}, 1<<20))
	for range 256 {
		out = append(out, mib...)
	}
	return out
}

// boundedBase is a Base over a provider with the given bounds; client,
// when not nil, replaces the shared HTTP client; now, when not nil, is
// the connector's clock.
func boundedBase(t *testing.T, url string, bounds registry.Bounds, client *http.Client, now func() time.Time) *connector.Base {
	t.Helper()
	p := testProvider()
	p.Bounds = bounds
	b, err := connector.NewBase(p, connector.Options{BaseURL: url, HTTPClient: client, Now: now,
		Credentials: connector.MapCredentials(map[string]string{"TEST_KEY": testKey})})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantCoded(t *testing.T, err error, class connector.Class, code string, says ...string) {
	t.Helper()
	var ce *connector.Error
	if !errors.As(err, &ce) || ce.Class != class || ce.Code != code {
		t.Fatalf("err = %v, want class %s code %q", err, class, code)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("err = %v, want it to say %q", err, s)
		}
	}
}

// TestGzipBombStopsAtThePageBound: a 260 KB gzip answer that expands to
// 256 MiB fails once its decoded bytes pass the page bound — BadRequest
// (not retryable), code too_large — whether the transport decoded it (it
// asked for gzip) or the connector did (a client that asks for nothing,
// a provider that compresses anyway). Before the bound it streamed all
// 256 MiB without an error.
func TestGzipBombStopsAtThePageBound(t *testing.T) {
	bomb := gzipBomb(t)
	if len(bomb) > 300<<10 {
		t.Fatalf("the bomb is %d bytes on the wire", len(bomb))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip") // asked for or not
		w.Write(bomb)
	}))
	t.Cleanup(srv.Close)
	noDecoding := connector.NewHTTPClient()
	noDecoding.Transport.(*http.Transport).DisableCompression = true
	for _, c := range []struct {
		name   string
		client *http.Client
	}{{"the transport decodes", nil}, {"the connector decodes", noDecoding}} {
		t.Run(c.name, func(t *testing.T) {
			b := boundedBase(t, srv.URL, registry.Bounds{PageBytes: 1 << 20}, c.client, nil)
			resp, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData, Dataset: "ds"},
				URL: srv.URL + "/x", Format: "json", Classify: accept})
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			n, err := io.Copy(io.Discard, resp.Body)
			wantCoded(t, err, connector.BadRequest, connector.CodeTooLarge, "larger than 1 MiB", "bounds.max_page_mib")
			if connector.Retryable(err) {
				t.Errorf("too large is retryable: %v", err)
			}
			if n > 1<<20 {
				t.Errorf("read %d bytes past the bound of %d", n, 1<<20)
			}
		})
	}
}

// TestPageBoundInTheHeadAndByDataset: an answer beyond the bound within
// its head fails Do itself; a dataset's own bound (registry.Dataset.Bounds)
// replaces its provider's for the calls a Skeleton makes for it
// (Exchange.Bounds).
func TestPageBoundInTheHeadAndByDataset(t *testing.T) {
	body := `{"rows":"` + strings.Repeat("a", 3000) + `"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	t.Cleanup(srv.Close)
	b := boundedBase(t, srv.URL, registry.Bounds{PageBytes: 1000}, nil, nil)
	_, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL + "/x", Format: "json", Classify: accept})
	wantCoded(t, err, connector.BadRequest, connector.CodeTooLarge, "larger than 1000 bytes")

	ds := &registry.Dataset{ID: "big", Provider: "test", Bounds: registry.Bounds{PageBytes: 4000, ObjectBytes: 4000, PageTimeout: time.Minute}}
	sk := connector.NewSkeleton(b, connector.Steps{Plan: func(_ *connector.Base, call permit.Call, _ connector.Request) (connector.Plan, error) {
		return connector.Plan{Exchange: connector.Exchange{Call: call, URL: srv.URL + "/x", Format: "json", Classify: accept}}, nil
	}})
	resp, err := sk.Fetch(context.Background(), connector.Request{Dataset: ds})
	if err != nil {
		t.Fatalf("within the dataset's bound: %v", err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(got) != body {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
}

// TestCompressedAnswerIsStoredDecoded: a gzip answer to a client that
// decodes nothing arrives decoded, as it does through the shared client;
// an encoding the connector cannot decode is Transient.
func TestCompressedAnswerIsStoredDecoded(t *testing.T) {
	body := `{"rows":[1,2,3]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/br" {
			w.Header().Set("Content-Encoding", "br")
			io.WriteString(w, "\x1b\x03")
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, body)
		zw.Close()
	}))
	t.Cleanup(srv.Close)
	client := connector.NewHTTPClient()
	client.Transport.(*http.Transport).DisableCompression = true
	b := boundedBase(t, srv.URL, registry.Bounds{}, client, nil)
	resp, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL + "/x", Format: "json", Classify: accept})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(got) != body || resp.Ext != "json" {
		t.Fatalf("got %q (%s), %v; want %q", got, resp.Ext, err, body)
	}
	_, err = b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL + "/br", Format: "json", Classify: accept})
	wantCoded(t, err, connector.Transient, "", `"br"`, "decoding")
}

// trickleClock is a connector clock the test moves.
type trickleClock struct{ secs atomic.Int64 }

var clockBase = time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)

func (c *trickleClock) now() time.Time {
	return clockBase.Add(time.Duration(c.secs.Load()) * time.Second)
}
func (c *trickleClock) tick(d time.Duration) { c.secs.Add(int64(d / time.Second)) }

// trickleServer answers with head at once, then — once release is closed
// (nil: at once) — a byte at a time, moving the clock a second before
// each, for as long as the client reads: a body no stall guard stops,
// since every byte is progress, and whose end never comes.
func trickleServer(t *testing.T, clock *trickleClock, head string, release chan struct{}) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, head)
		w.(http.Flusher).Flush()
		if release != nil {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		for r.Context().Err() == nil {
			clock.tick(time.Second)
			if _, err := w.Write([]byte{'a'}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestPageDeadlineStopsATricklingBody: a body trickling a byte a second
// fails once the page's deadline (5 minutes by default) passes on the
// connector's clock, as Transient page_timeout — whether it trickles in
// its head or after it. Before the deadline such a body ran until the
// activity's timeout (here, the test's safety context).
func TestPageDeadlineStopsATricklingBody(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only for the code without a deadline
	defer cancel()
	t.Run("after the head", func(t *testing.T) {
		clock := &trickleClock{}
		release := make(chan struct{})
		url := trickleServer(t, clock, `{"rows":"`+strings.Repeat("a", 2*connector.HeadSize), release)
		b := boundedBase(t, url, registry.Bounds{}, nil, clock.now)
		resp, err := b.Do(ctx, connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: url + "/x", Format: "json", Classify: accept})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		close(release)
		_, err = io.Copy(io.Discard, resp.Body)
		wantCoded(t, err, connector.Transient, connector.CodePageTimeout, "did not arrive within 5m0s", "bounds.page_timeout_seconds")
		if !connector.Retryable(err) {
			t.Errorf("a page past its deadline is not retryable: %v", err)
		}
	})
	t.Run("in the head", func(t *testing.T) {
		clock := &trickleClock{}
		url := trickleServer(t, clock, `{"rows":"`, nil)
		b := boundedBase(t, url, registry.Bounds{PageTimeout: 90 * time.Second}, nil, clock.now)
		_, err := b.Do(ctx, connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: url + "/x", Format: "json", Classify: accept})
		wantCoded(t, err, connector.Transient, connector.CodePageTimeout, "did not arrive within 1m30s")
	})
}

// TestForeignAnswersAreTransient: an HTML or empty body, or plain text,
// where JSON or XML was asked is the provider's fault — Transient,
// retryable — whatever the status and whatever the classifier made of it:
// a gateway's HTML 400 or 404 page is not our bad request, and an empty
// or HTML 200 is no data. A JSON 400 stays BadRequest, and XML where JSON
// was asked (data.go.kr's errors) is not foreign.
func TestForeignAnswersAreTransient(t *testing.T) {
	const nginx400 = "<html>\r\n<head><title>400 Bad Request</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
	cases := []struct {
		name   string
		status int
		body   string
		format string
		class  connector.Class // 0: success
		code   string
		says   string
	}{
		{"gateway HTML 400", 400, nginx400, "json", connector.Transient, "400", "got an HTML page"},
		{"HTML 404 with a doctype", 404, "<!DOCTYPE html><html><body>Not Found</body></html>", "xml", connector.Transient, "404", "expected an XML answer, got an HTML page"},
		{"empty 200", 200, "", "json", connector.Transient, "", "got an empty body"},
		{"white space 200", 200, " \r\n", "xml", connector.Transient, "", "got an empty body"},
		{"HTML 200", 200, "<html><body>maintenance</body></html>", "json", connector.Transient, "", "got an HTML page"},
		{"plain 404", 404, "404 page not found", "json", connector.Transient, "404", "neither JSON nor XML"},
		{"JSON 400", 400, `{"error":"bad date"}`, "json", connector.BadRequest, "400", ""},
		{"XML 200 where JSON was asked", 200, `<OpenAPI_ServiceResponse><cmmMsgHeader/></OpenAPI_ServiceResponse>`, "json", 0, "", ""},
		{"JSON 200", 200, `{"rows":[]}`, "json", 0, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			}))
			t.Cleanup(srv.Close)
			b := boundedBase(t, srv.URL, registry.Bounds{}, nil, nil)
			// A classifier as the providers' are: the status decides
			// any answer that is not a success; an empty answer it
			// calls NoData.
			classify := func(h connector.Head) connector.Verdict {
				if h.Status != 200 {
					return connector.StatusVerdict(h, time.Second)
				}
				if len(h.Bytes) == 0 {
					return connector.Fail(connector.NoData, "", "nothing")
				}
				return connector.Verdict{}
			}
			resp, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL + "/x",
				Format: c.format, Classify: classify})
			if c.class == 0 {
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return
			}
			wantCoded(t, err, c.class, c.code, c.says)
			if got := connector.Retryable(err); got != (c.class == connector.Transient) {
				t.Errorf("retryable %v: %v", got, err)
			}
		})
	}
	// The shared rule, for classifiers that call StatusVerdict.
	v := connector.StatusVerdict(connector.Head{Status: 404, Bytes: []byte(nginx400), Complete: true, Format: "json"}, time.Second)
	if v.Err == nil || v.Err.Class != connector.Transient || v.Err.Code != "404" {
		t.Errorf("StatusVerdict of an HTML 404 = %+v", v.Err)
	}
	v = connector.StatusVerdict(connector.Head{Status: 404, Bytes: []byte(nginx400), Complete: true}, time.Second)
	if v.Err == nil || v.Err.Class != connector.BadRequest {
		t.Errorf("StatusVerdict of an HTML 404 where no format was asked = %+v", v.Err)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1000: "1000 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 64 << 20: "64 MiB", 1 << 30: "1 GiB", 5 << 40: "5 TiB"} {
		if got := connector.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
