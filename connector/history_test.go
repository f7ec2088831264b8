package connector_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// echoLineServer answers every request with its own request line as the
// status line: the transport's "malformed HTTP response" error then quotes
// the request URL, key included.
func echoLineServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				io.WriteString(c, line+"\r\n")
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestErrorsNeverUnwrapToASecret: the classified error, every error it
// unwraps to and the failure Temporal's converter records from it (which
// follows Unwrap into the workflow history) hold no key, while errors.Is
// still sees through the redaction.
func TestErrorsNeverUnwrapToASecret(t *testing.T) {
	base := echoLineServer(t)
	log := &connectortest.Log{}
	b := newBase(t, base, nil, log, nil)
	key, _ := b.Credential("api_key")
	_, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData},
		URL: b.URL("/fred/"+key, "series_id=DGS10&api_key="+key), Classify: accept})
	if c, ok := connector.ClassOf(err); !ok || c != connector.Transient || !strings.Contains(err.Error(), "malformed HTTP") {
		t.Fatalf("echoed request line: %v", err)
	}
	depth := 0
	for e := err; e != nil; e = errors.Unwrap(e) {
		connectortest.AssertNoSecrets(t, "a wrapped error", e.Error(), testKey)
		depth++
	}
	if depth < 3 {
		t.Errorf("the chain has %d links; the test expects the transport error below the url.Error", depth)
	}
	f := temporal.GetDefaultFailureConverter().ErrorToFailure(err)
	data, merr := proto.Marshal(f)
	if merr != nil {
		t.Fatal(merr)
	}
	connectortest.AssertNoSecrets(t, "the Temporal failure", string(data), testKey)
	connectortest.AssertNoSecrets(t, "log", log.String(), testKey)

	// errors.Is still reaches the original chain.
	ln, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	_, err = b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData},
		URL: refused + "/x?api_key=" + key, Classify: accept})
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("errors.Is(ECONNREFUSED) lost in %v", err)
	}
}

// TestProviderCodesAreRedacted: a provider code is the provider's text
// too (it reaches events and the limiter's history): a code echoing the
// key is redacted and bounded.
func TestProviderCodesAreRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{}`)) }))
	t.Cleanup(srv.Close)
	b := newBase(t, srv.URL, nil, nil, nil)
	key, _ := b.Credential("api_key")
	_, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL + "/x",
		Classify: func(connector.Head) connector.Verdict {
			return connector.Fail(connector.RateLimited, "E-"+key+strings.Repeat("x", 200), "slow down")
		}})
	var e *connector.Error
	if !errors.As(err, &e) || strings.Contains(e.Code, testKey) || len(e.Code) > 64 {
		t.Errorf("code %q", e.Code)
	}
}
