// Package connector is the shared skeleton of Sluice's provider connectors:
// the typed errors every outcome is classified into, the request and
// response shapes, the shared HTTP client, credential lookup, redaction of
// secrets and the hooks a global rate limiter plugs into.
//
// # Use
//
// One subpackage per provider wire format (connector/kis, connector/ecos,
// connector/fred, connector/upbit, connector/datago) builds, signs and sends
// a dataset's request and classifies the answer at the provider boundary.
// They register themselves with Register; link them all into a binary with
//
//	import _ "github.com/sluicehq/sluice/connector/all"
//
// and get a provider's connector with New(provider, Options{…}). Create one
// connector per provider and process and share it: the KIS connector
// single-flights its token refresh per instance.
//
// Every provider connector is the one Skeleton filled in with the
// provider's Steps: the request fields it needs, a Plan that builds the
// request (URL, credentials, headers, classifier; how it is sent and how
// its answers page) and its probe. The Skeleton checks the dataset, fails
// what the plan rejects, sends through Base.Do, sets Response.Next and
// reads the probe's answer, the same way for every provider.
//
// A Connector hands back the raw response body as a stream: bronze keeps
// the bytes exactly as the provider sent them (any gzip or deflate
// Content-Encoding removed).
// Errors a provider reports inside an HTTP 200 (ECOS RESULT, data.go.kr XML
// gateway envelopes, KIS rt_cd) are caught by peeking a bounded head of the
// body (HeadSize bytes) before it is handed on; the returned Body still
// yields every byte. Large bodies are never buffered.
//
// # Errors
//
// Every error a connector returns is either a context error of the
// caller's context (or an error of Options.Limiter's Wait, wrapped) or carries a
// Class (ClassOf). Retryable classes are RateLimited, QuotaExhausted,
// Blocked and Transient; Error.Wait says how long to wait. The mapping:
//
//   - RateLimited: KIS EGW00201 (in HTTP 500 or 200) and EGW00133 (token
//     endpoint, or a token replacement within a minute of the last
//     request); ECOS ERROR-602; FRED 429; UPBIT 429; data.go.kr 23.
//   - QuotaExhausted: data.go.kr 22, ResetAt the next midnight in the
//     provider's timezone.
//   - Blocked: UPBIT 418, Until from Retry-After, else a time the message
//     names, else a minute.
//   - AuthFailed: a missing credential; KIS EGW00121/EGW00123 on the
//     replacement token or on a token issued for the call, a refused token
//     request; ECOS INFO-100; FRED 400 naming api_key, 401, 403; UPBIT 401
//     and its error names; data.go.kr 20, 29, 30, 31, 32.
//   - NoData: KIS output arrays all empty (whole body in the head); ECOS
//     INFO-200, list_total_count 0 or no rows; FRED count 0 or no
//     observations; UPBIT []; data.go.kr 03, totalCount 0 or empty items.
//   - BadRequest: KIS another rt_cd; ECOS ERROR-100, 101, 300, 301, 400;
//     other 4xx with a JSON or XML body everywhere; a request the
//     connector cannot build; a redirect it refuses to follow (see
//     Redirects); an answer beyond its page bound (Code CodeTooLarge, see
//     Bounds).
//   - Transient: 5xx, FRED 423, timeouts, connection resets, truncated or
//     stalled bodies, a page past its deadline (Code CodePageTimeout),
//     unknown codes, and an empty, HTML or plain-text body where JSON or
//     XML was asked (Head.Foreign), whatever its status: a gateway's HTML
//     400 or 404 page is not the provider's verdict on the request, and an
//     empty 200 is not NoData. Base.Do applies this rule over every
//     classifier (a BadRequest, NoData or success verdict on such a body
//     becomes ForeignVerdict), and StatusVerdict applies it too.
//
// Defaults when the provider names no wait: KIS 1 s (EGW00201) and 60 s
// (EGW00133), ECOS 10 s, FRED 20 s, UPBIT 1 s and a 60 s block, data.go.kr
// 1 s; a Retry-After header always wins.
//
// # Bounds
//
// Base.Do bounds every answer by its dataset's registry.Bounds (its
// provider's, overridden per dataset; Skeleton.Fetch carries them in
// Exchange.Bounds): a page holds at most Bounds.PageBytes decoded bytes — counted
// after the transport's gzip, or the connector's own decoding of a gzip or
// deflate answer nobody asked to be compressed; another Content-Encoding
// fails as Transient — and a read beyond it fails as BadRequest with Code
// CodeTooLarge, not retried. A page must arrive in full within
// Bounds.PageTimeout from the moment its request was written, on the
// connector's clock (Options.Now) at every read and by a timer while a read
// is blocked: a body trickling a byte a second fails as Transient with
// Code CodePageTimeout. The stall timeout (Options.StallTimeout) still
// catches a body that stops. The bound on an object of several pages is
// its caller's (activities.Ingest).
//
// # Pages
//
// A Response's Next names the page after it (once its body was read to
// the end): KIS the same query with tr_cont: N while the response header
// tr_cont is M or F; ECOS the next rows while list_total_count lies beyond
// the last row asked; FRED the next offset while count does (in the
// dataset's own limit when it sets one); data.go.kr the next pageNo while
// totalCount, which usually follows the items and is read from the last
// TailSize bytes, lies beyond pageNo × numOfRows (an answer without
// totalCount fails Next: whether rows are missing cannot be told); UPBIT
// the page before the oldest candle of a full page (Request.Cursor is the
// next to) while that candle is after From. Each page is a call of its
// own through Options.Limiter. Callers bound the loop and check that the
// cursor advances (activities.Ingest does).
//
// # Probes
//
// Probe sends one cheap request and returns at most MaxProbeBytes of its
// answer (ProbeAnswer), for the watch's shape fingerprint and newest
// period; Newest says whether the answer holds the newest rows:
//
//	kis     the last 14 days of the dataset (one call, at most ~50 rows, newest first)   newest
//	ecos    the rows (up to 100) of a window sized to the cycle: D 14 days,
//	        SM 6 months, M 12 months, Q 2 years, S 3 years, A 5 years         newest unless rows were left out
//	fred    the newest observation of the last 400 days (limit=1, sort_order=desc)      newest
//	upbit   today's candle (count=1)                                                   newest
//	datago  one row (numOfRows=1) of the last 14 days                                   not known to be the newest
//
// NoData from a probe comes back as an error of class NoData: the provider
// answered, but the window held no rows.
//
// # Secrets
//
// Credentials are read by the environment variable names the registry
// declares (NAME, or the file named by NAME_FILE). Every URL a connector
// returns or logs goes through RedactURL, every message through Redact
// (every known key and token in any spelling, and whatever sensitive
// names carry), and the connector's logger is wrapped in a
// RedactingHandler that knows every key and token the connector has seen.
// An Error's Err is a sanitized copy of the underlying error: every link
// redacted and unwrapping only to the next redacted link, never to an
// original that may spell out a key (Temporal's failure converter follows
// Unwrap into the workflow history); errors.Is still sees the original.
//
// # Redirects
//
// The HTTP client follows no redirect; Base.Do decides. A redirect to
// another host or port, from https to plain http, to a Location that is
// not an http(s) URL, beyond five hops, or turning a POST into a GET is
// refused as BadRequest (Code the status; the message names the status
// and the target host, never its path or query), so that KIS's appkey and
// appsecret headers and token request body never reach another host. A
// same-host redirect (http to https included) is followed as a call of its
// own: through Options.Limiter again.
//
// # Rate limiting
//
// Connectors do not pace calls, and know of rate limiting only the
// contract in package ratelimit/permit: one permit.Limiter
// (Options.Limiter). Its Wait is called before every outbound request
// (data and token calls, permit.Call.Kind; each redirect hop) and returns
// the permit's deadline; once the connection is ready — after DNS, TCP and
// TLS — and just before the request is written, the deadline is checked
// again, and a late request asks Wait for a new permit (keeping its
// connection) instead of leaving on the stale one. Its Observe is called
// after every answer with a permit.Observation: its status, its classified
// error and the provider's own signals, parsed by its connector (UPBIT
// Remaining-Req becomes Observation.Remaining): a global limiter plugs in
// there without knowing any provider's headers.
package connector
