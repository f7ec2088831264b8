// Package httpserver builds the HTTP servers Sluice listens with (the codec
// endpoint, /metrics) with every limit set, so that a client that
// trickles its headers or body, never reads the answer or holds an idle
// connection cannot keep a connection (and its goroutine) forever.
package httpserver

import (
	"net/http"
	"time"
)

// Limits bound a server's connections. A zero field is not "no limit":
// New refuses to leave one unset by taking Default's.
type Limits struct {
	// ReadHeader bounds reading the request headers.
	ReadHeader time.Duration
	// Read bounds reading the whole request, body included.
	Read time.Duration
	// Write bounds the time from the end of the request headers to the
	// end of the answer.
	Write time.Duration
	// Idle bounds how long a keep-alive connection waits for its next
	// request.
	Idle time.Duration
	// MaxHeaderBytes bounds the request headers' size.
	MaxHeaderBytes int
}

// Default suits a small request answered at once.
var Default = Limits{
	ReadHeader:     10 * time.Second,
	Read:           30 * time.Second,
	Write:          30 * time.Second,
	Idle:           2 * time.Minute,
	MaxHeaderBytes: 64 << 10,
}

// New returns a server for h with the limits l (Default's for any field
// left zero).
func New(h http.Handler, l Limits) *http.Server {
	if l.ReadHeader <= 0 {
		l.ReadHeader = Default.ReadHeader
	}
	if l.Read <= 0 {
		l.Read = Default.Read
	}
	if l.Write <= 0 {
		l.Write = Default.Write
	}
	if l.Idle <= 0 {
		l.Idle = Default.Idle
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = Default.MaxHeaderBytes
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeader,
		ReadTimeout:       l.Read,
		WriteTimeout:      l.Write,
		IdleTimeout:       l.Idle,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}
