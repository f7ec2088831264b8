package connector_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// TestAmbiguousAnswersAreConfirmed: an answer a classifier marks as
// ambiguous (Confirm) is Transient, retried after at least ConfirmWait
// with the provider's code and message kept, until Confirm of them came in
// a row; a success between them starts the count over.
func TestAmbiguousAnswersAreConfirmed(t *testing.T) {
	var answer atomic.Value // "ok", "ambiguous" or "nodata"
	answer.Store("ambiguous")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(answer.Load().(string)))
	}))
	t.Cleanup(srv.Close)
	classify := func(h connector.Head) connector.Verdict {
		switch string(h.Bytes) {
		case "ambiguous":
			v := connector.Fail(connector.AuthFailed, "30", "SERVICE_KEY_IS_NOT_REGISTERED_ERROR")
			v.Err.Confirm = connector.DefaultConfirm
			return v
		case "nodata":
			return connector.Fail(connector.NoData, "03", "NODATA_ERROR")
		}
		return connector.Verdict{}
	}
	b := newBase(t, srv.URL, nil, nil, nil)
	dataset := "datago-a"
	call := func() *connector.Error {
		t.Helper()
		resp, err := b.Do(context.Background(), connector.Exchange{URL: srv.URL, Classify: classify,
			Call: permit.Call{Provider: "test", Dataset: dataset, Kind: permit.CallData}})
		if err == nil {
			resp.Body.Close()
			return nil
		}
		e := connector.AsError(err)
		if e.Code != "30" && e.Code != "03" {
			t.Fatalf("error lost the provider's code: %v", err)
		}
		return e
	}
	wantUnconfirmed := func(e *connector.Error, n int) {
		t.Helper()
		if e == nil || e.Class != connector.Transient || e.Unconfirmed != connector.AuthFailed {
			t.Fatalf("answer %d: got %+v, want Transient unconfirmed auth_failed", n, e)
		}
		if e.RetryAfter < connector.ConfirmWait {
			t.Errorf("answer %d: retry after %s, want at least %s", n, e.RetryAfter, connector.ConfirmWait)
		}
		if !strings.Contains(e.Error(), "SERVICE_KEY_IS_NOT_REGISTERED_ERROR") || !strings.Contains(e.Error(), "unconfirmed auth_failed") {
			t.Errorf("answer %d: message %q lacks the provider's words or the unconfirmed mark", n, e.Error())
		}
		if !connector.Retryable(e) {
			t.Errorf("answer %d: an unconfirmed answer must be retryable", n)
		}
	}
	wantUnconfirmed(call(), 1)
	wantUnconfirmed(call(), 2)
	// A success between ambiguous answers: they were not meant.
	answer.Store("ok")
	if e := call(); e != nil {
		t.Fatalf("success: %v", e)
	}
	answer.Store("ambiguous")
	wantUnconfirmed(call(), 1)
	// So is an answer that looked for rows (NoData): the key works.
	answer.Store("nodata")
	if e := call(); e == nil || e.Class != connector.NoData {
		t.Fatalf("no data: %+v", e)
	}
	answer.Store("ambiguous")
	wantUnconfirmed(call(), 1)
	wantUnconfirmed(call(), 2)
	// Another dataset's success says nothing of this one's (data.go.kr
	// approves a key service by service).
	dataset = "datago-b"
	answer.Store("ok")
	if e := call(); e != nil {
		t.Fatalf("another dataset's success: %v", e)
	}
	dataset = "datago-a"
	answer.Store("ambiguous")
	e := call()
	if e == nil || e.Class != connector.AuthFailed || e.Unconfirmed != 0 {
		t.Fatalf("third ambiguous answer in a row: got %+v, want auth_failed", e)
	}
	if connector.Retryable(e) {
		t.Error("a confirmed auth failure must not be retried")
	}
	if !strings.Contains(e.Message, "confirmed by 3 answers in a row") {
		t.Errorf("confirmed message %q does not say it was confirmed", e.Message)
	}
	// And the count starts over after a confirmation.
	wantUnconfirmed(call(), 1)
}

// TestFinalClassIsNotCounted: without Confirm an error keeps its class at
// once.
func TestFinalClassIsNotCounted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) }))
	t.Cleanup(srv.Close)
	b := newBase(t, srv.URL, nil, nil, nil)
	_, err := b.Do(context.Background(), connector.Exchange{URL: srv.URL, Classify: func(connector.Head) connector.Verdict {
		return connector.Fail(connector.AuthFailed, "31", "DEADLINE_HAS_EXPIRED_ERROR")
	}})
	if e := connector.AsError(err); e.Class != connector.AuthFailed || e.Unconfirmed != 0 || e.Wait(time.Now()) != 0 {
		t.Fatalf("got %+v, want a final auth_failed", e)
	}
}
