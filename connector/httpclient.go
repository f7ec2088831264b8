package connector

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Timeouts of the shared HTTP client.
const (
	dialTimeout           = 10 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	responseHeaderTimeout = 90 * time.Second // ECOS answers ERROR-400 after its own 60 s
	idleConnTimeout       = 90 * time.Second
	maxIdleConnsPerHost   = 16
)

var sharedClient = sync.OnceValue(NewHTTPClient)

// HTTPClient returns the process-wide HTTP client every connector uses
// unless Options.HTTPClient says otherwise: pooled keep-alive connections
// (16 idle per host), dial, TLS and response-header timeouts, HTTP/2,
// transparent gzip and the proxy from the environment. It has no overall
// timeout, so large bodies can stream; the caller's context and the
// connector's stall timeout bound a call.
func HTTPClient() *http.Client { return sharedClient() }

// NewHTTPClient builds a client configured like the shared one, for
// callers that need their own pool.
func NewHTTPClient() *http.Client {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          128,
		MaxIdleConnsPerHost:   maxIdleConnsPerHost,
		IdleConnTimeout:       idleConnTimeout,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ResponseHeaderTimeout: responseHeaderTimeout,
		ExpectContinueTimeout: time.Second,
		// DisableCompression stays false: the transport asks for gzip and
		// decompresses transparently, so bodies arrive as the provider
		// meant them.
	}
	return &http.Client{Transport: t}
}
