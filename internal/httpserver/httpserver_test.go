package httpserver

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestNewSetsEveryLimit(t *testing.T) {
	s := New(http.NotFoundHandler(), Limits{Write: time.Minute})
	if s.ReadHeaderTimeout != Default.ReadHeader || s.ReadTimeout != Default.Read || s.WriteTimeout != time.Minute ||
		s.IdleTimeout != Default.Idle || s.MaxHeaderBytes != Default.MaxHeaderBytes {
		t.Errorf("server limits: %+v", s)
	}
	for name, d := range map[string]time.Duration{"ReadHeader": Default.ReadHeader, "Read": Default.Read, "Write": Default.Write, "Idle": Default.Idle} {
		if d <= 0 {
			t.Errorf("Default.%s is %s", name, d)
		}
	}
}

// TestSlowBodyIsCut: a request whose body never finishes (slowloris) is
// cut by the read timeout: the handler's read fails and the connection is
// closed, instead of both waiting forever.
func TestSlowBodyIsCut(t *testing.T) {
	readErr := make(chan error, 1)
	s := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}), Limits{Read: 300 * time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { s.Close() })

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Headers promising a body, then one byte of it, then nothing.
	fmt.Fprintf(c, "POST /decode HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nx")
	select {
	case err := <-readErr:
		if err == nil {
			t.Error("the unfinished body was read whole")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler still waits for the body")
	}
	// The server closes the connection.
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("the connection was not closed by the server: %v", err)
	}
}
