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
// (16 idle per host), dial, TLS and response-header timeouts, transparent
// gzip and the proxy from the environment. It has no overall timeout, so
// large bodies can stream; the caller's context and the connector's stall
// timeout bound a call.
//
// It speaks HTTP/1.1 only. Each request then holds its connection alone
// from the moment the connection is ready until the request is written,
// which is where the connector checks the rate limiter's deadline (see
// Options.Limiter) and, when a request must not leave, closes the
// connection; an HTTP/2 connection is shared by every request in flight
// and net/http gives no point between its readiness and the write at
// which one request can be stopped. Rate-limited calls gain nothing from
// multiplexing.
func HTTPClient() *http.Client { return sharedClient() }

// NewHTTPClient builds a client configured like the shared one, for
// callers that need their own pool.
func NewHTTPClient() *http.Client {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           guardedDial(dialer.DialContext),
		Protocols:             http1Only(),
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

func http1Only() *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	return &p
}
