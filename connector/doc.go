// Package connector is the shared skeleton of Sluice's provider connectors:
// the typed errors every outcome is classified into, the request and
// response shapes, the shared HTTP client, credential lookup, redaction of
// secrets and the hooks a global rate limiter plugs into.
//
// One subpackage per provider wire format (connector/kis, connector/ecos,
// connector/fred, connector/upbit, connector/datago) builds, signs and sends
// a dataset's request and classifies the answer at the provider boundary.
// They register themselves with Register; link them all into a binary with
//
//	import _ "github.com/sluicehq/sluice/connector/all"
//
// and get a provider's connector with New.
//
// A Connector hands back the raw response body as a stream: bronze keeps
// the bytes exactly as the provider sent them. Errors a provider reports
// inside an HTTP 200 (ECOS RESULT, data.go.kr XML gateway envelopes, KIS
// rt_cd) are caught by peeking a bounded head of the body (HeadSize bytes)
// before the body is handed on; the returned Body still yields every byte.
//
// Every error a connector returns is either a context error of the
// caller's context or carries a Class (see ClassOf); an *Error never holds
// a secret in its message, and URLs and log lines are redacted.
package connector
