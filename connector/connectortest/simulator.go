package connectortest

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
)

// SimNow is the frozen clock of the error-class tables: a Tuesday
// afternoon in Seoul, when every provider has published the 2024 dates
// the tables ask for. With time stopped, a declared per-second limit
// binds after exactly its count of calls however slow the machine, and a
// minimum interval binds on the second call.
var SimNow = time.Date(2025, 3, 11, 14, 30, 0, 0, time.FixedZone("KST", 9*3600))

// FrozenClock returns SimNow, always.
func FrozenClock() time.Time { return SimNow }

// Serve serves h (a simulator's Handler) on a loopback server that
// closes when the test ends and returns its base URL. The package does not
// import the simulator: connectors and simulator stay independent readings
// of the wire facts; only test files use both.
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// FaultCase is an injected fault, in the `sluice sim --fault` syntax
// (simulator.ParseFault), and the Transient error a connector must turn it
// into.
type FaultCase struct {
	// Name describes the fault, e.g. "connection reset".
	Name string
	// Spec is the fault in the --fault syntax.
	Spec string
	// Status is the HTTP status the error carries; 0 when no answer
	// arrived.
	Status int
	// Message is a substring of the error text.
	Message string
}

// TransientFaults are the faults every provider's connector must classify
// as Transient, injected for provider (and dataset, when not empty): a
// 5xx answer, a connection reset before any answer, a body cut off after
// 100 bytes, and the provider down (503).
func TransientFaults(provider, dataset string) []FaultCase {
	target := "provider=" + provider
	if dataset != "" {
		target += ",dataset=" + dataset
	}
	return []FaultCase{
		{Name: "5xx", Spec: target + ",error-rate=1,error-status=502", Status: http.StatusBadGateway},
		{Name: "connection reset", Spec: target + ",reset-rate=1", Message: "sending request"},
		{Name: "truncated body", Spec: target + ",truncate-after=100", Status: http.StatusOK, Message: "truncated"},
		{Name: "provider down", Spec: target + ",down", Status: http.StatusServiceUnavailable},
	}
}

// Expect is what a call must end with: a class, and when set the
// provider's code, the HTTP status and a substring of the message.
type Expect struct {
	// Class is the class the call must end with.
	Class connector.Class
	// Code is the provider's code, checked when not empty.
	Code string
	// Status is the HTTP status (see AssertClass for when it is checked).
	Status int
	// Message is a substring of the error text, checked when not empty.
	Message string
}

// AssertClass fails the test unless err is a *connector.Error matching
// want. Status is checked when want.Status is not 0 or want.Class is
// Transient with an empty Code (a fault: 0 then means no answer arrived).
func AssertClass(t testing.TB, what string, err error, want Expect) {
	t.Helper()
	var e *connector.Error
	if !errors.As(err, &e) {
		t.Errorf("%s: got %v, want a %s error", what, err, want.Class)
		return
	}
	if e.Class != want.Class {
		t.Errorf("%s: class %s, want %s: %v", what, e.Class, want.Class, err)
	}
	if want.Code != "" && e.Code != want.Code {
		t.Errorf("%s: code %q, want %q: %v", what, e.Code, want.Code, err)
	}
	if (want.Status != 0 || (want.Class == connector.Transient && want.Code == "")) && e.Status != want.Status {
		t.Errorf("%s: HTTP status %d, want %d: %v", what, e.Status, want.Status, err)
	}
	if want.Message != "" && !strings.Contains(err.Error(), want.Message) {
		t.Errorf("%s: error %q does not mention %q", what, err, want.Message)
	}
}
