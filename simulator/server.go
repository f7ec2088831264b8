package simulator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Start listens on addr (host:port; port 0 picks a free one) and serves
// the simulator in the background until ctx ends or Close is called. It
// returns the base URL, e.g. "http://127.0.0.1:41234", that every
// provider's base URL should be pointed at.
func (s *Simulator) Start(ctx context.Context, addr string) (string, error) {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.srv != nil {
		return "", errors.New("starting simulator: already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("starting simulator: %w", err)
	}
	ln = arrivalListener{ln}
	srv := &http.Server{
		Handler:           s,
		ConnContext:       connContext,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.srv, s.ln = srv, ln
	s.baseURL = "http://" + ln.Addr().String()
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("simulator stopped serving", "err", err)
		}
	}()
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	go func() {
		<-s.done
		stop()
	}()
	s.log.Info("simulator listening", "url", s.baseURL, "rate_scale", s.scale)
	return s.baseURL, nil
}

// BaseURL returns the URL Start listens on, or "" before Start.
func (s *Simulator) BaseURL() string {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	return s.baseURL
}

// Done returns a channel closed when the server stopped serving, or nil
// before Start.
func (s *Simulator) Done() <-chan struct{} {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	return s.done
}

// Close stops the server started by Start: it lets requests in flight
// finish for up to two seconds, then closes every connection. Closing a
// simulator that was never started, or twice, does nothing.
func (s *Simulator) Close() error {
	s.srvMu.Lock()
	srv, done := s.srv, s.done
	s.srvMu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx)
	if err != nil {
		err = srv.Close()
	}
	<-done
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("closing simulator: %w", err)
	}
	return nil
}
