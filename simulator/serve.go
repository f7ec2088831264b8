package simulator

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// reply is a provider's answer before faults shape its delivery.
type reply struct {
	status int
	header http.Header
	body   []byte
	// outcome is a short word for the debug log: ok, auth, limit, error.
	outcome string
}

func newReply(status int, contentType string, body []byte, outcome string) *reply {
	h := http.Header{}
	h.Set("Content-Type", contentType)
	return &reply{status: status, header: h, body: body, outcome: outcome}
}

const (
	ctJSON     = "application/json; charset=utf-8"
	ctJSONUp   = "application/json;charset=UTF-8"
	ctXML      = "text/xml;charset=UTF-8"
	ctTextHTML = "text/html"
)

// effect is the combined result of every fault matching a request.
type effect struct {
	down, reset, fail bool
	errStatus         int
	delay             time.Duration
	slowBody          int
	truncateAfter     int
	rejectAt          float64
}

// effectFor rolls the fault dice for one request.
func (s *Simulator) effectFor(provider, dataset string) effect {
	var e effect
	faults := *s.faults.Load()
	if len(faults) == 0 {
		return e
	}
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	for _, f := range faults {
		if !f.matches(provider, dataset) {
			continue
		}
		if f.Down {
			e.down = true
		}
		if f.ResetRate > 0 && s.rng.Float64() < f.ResetRate {
			e.reset = true
		}
		if f.ErrorRate > 0 && s.rng.Float64() < f.ErrorRate {
			e.fail = true
			if e.errStatus == 0 {
				e.errStatus = f.ErrorStatus
			}
		}
		if !f.Latency.IsZero() {
			e.delay += f.Latency.sample(s.rng.Float64())
		}
		if f.SlowBody > 0 && (e.slowBody == 0 || f.SlowBody < e.slowBody) {
			e.slowBody = f.SlowBody
		}
		if f.TruncateAfter > 0 && (e.truncateAfter == 0 || f.TruncateAfter < e.truncateAfter) {
			e.truncateAfter = f.TruncateAfter
		}
		if f.RejectAtFraction > 0 && (e.rejectAt == 0 || f.RejectAtFraction < e.rejectAt) {
			e.rejectAt = f.RejectAtFraction
		}
	}
	if e.errStatus == 0 {
		e.errStatus = http.StatusServiceUnavailable
	}
	return e
}

// ServeHTTP serves the providers and the control API.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_sim/") || r.URL.Path == "/_sim" {
		s.control(w, r)
		return
	}
	rt := s.route(r)
	if rt.prov == nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("404 page not found\n"))
		return
	}
	c := &rt.prov.counters
	c.requests.Add(1)
	dsID := ""
	if rt.ds != nil {
		dsID = rt.ds.ID
	}
	e := s.effectFor(rt.prov.p.ID, dsID)
	switch {
	case e.down:
		c.down.Add(1)
		s.logRequest(r, rt, http.StatusServiceUnavailable, "fault-down")
		writeStatusPage(w, http.StatusServiceUnavailable)
		return
	case e.reset:
		c.resets.Add(1)
		s.logRequest(r, rt, 0, "fault-reset")
		resetConnection(w)
		return
	case e.fail:
		c.errors.Add(1)
		s.logRequest(r, rt, e.errStatus, "fault-error")
		writeStatusPage(w, e.errStatus)
		return
	}
	if e.delay > 0 {
		c.delayed.Add(1)
		if err := s.sleep(r.Context(), e.delay); err != nil {
			return
		}
	}
	var rep *reply
	switch rt.kind {
	case routeKISToken:
		rep = s.serveKISToken(r)
	case routeKISRevoke:
		rep = s.serveKISRevoke(r)
	case routeKISData:
		rep = s.serveKISData(r, rt, e.rejectAt)
	case routeECOS:
		rep = s.serveECOS(r, rt, e.rejectAt)
	case routeFRED:
		rep = s.serveFRED(r, rt, e.rejectAt)
	case routeUpbitCandles:
		rep = s.serveUpbitCandles(r, rt, e.rejectAt)
	case routeUpbitExchange:
		rep = s.serveUpbitExchange(r, rt, e.rejectAt)
	case routeDatago:
		rep = s.serveDatago(r, rt, e.rejectAt)
	case routeDatagoUnknown:
		rep = s.serveDatagoUnknown(r, rt, e.rejectAt)
	}
	if rep.outcome == "auth" {
		c.authFailures.Add(1)
	}
	s.logRequest(r, rt, rep.status, rep.outcome)
	s.deliver(w, r, rep, e, c)
}

// deliver writes the reply, slowly or truncated when a fault says so.
func (s *Simulator) deliver(w http.ResponseWriter, r *http.Request, rep *reply, e effect, c *provCounters) {
	h := w.Header()
	for k, v := range rep.header {
		h[k] = v
	}
	body := rep.body
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rep.status)
	if r.Method == http.MethodHead {
		return
	}
	truncated := false
	if e.truncateAfter > 0 && e.truncateAfter < len(body) {
		body = body[:e.truncateAfter]
		truncated = true
		c.truncated.Add(1)
	}
	if e.slowBody > 0 && len(body) > 0 {
		c.slowed.Add(1)
		s.writeSlowly(r.Context(), w, body, e.slowBody)
	} else {
		_, _ = w.Write(body)
	}
	if truncated {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		// Abort: the server closes the connection without completing
		// the body, as a dropped upstream would.
		panic(http.ErrAbortHandler)
	}
}

// writeSlowly sends body at rate bytes a second in chunks of a tenth of a
// second.
func (s *Simulator) writeSlowly(ctx context.Context, w http.ResponseWriter, body []byte, rate int) {
	chunk := rate / 10
	if chunk < 1 {
		chunk = 1
	}
	flusher, _ := w.(http.Flusher)
	for len(body) > 0 {
		n := min(chunk, len(body))
		// Wait first, so the last byte leaves len/rate seconds after the
		// headers.
		if err := s.sleep(ctx, time.Duration(float64(n)/float64(rate)*float64(time.Second))); err != nil {
			return
		}
		if _, err := w.Write(body[:n]); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		body = body[n:]
	}
}

func writeStatusPage(w http.ResponseWriter, status int) {
	text := strconv.Itoa(status) + " " + http.StatusText(status)
	body := "<html>\r\n<head><title>" + text + "</title></head>\r\n<body>\r\n<center><h1>" + text + "</h1></center>\r\n</body>\r\n</html>\r\n"
	w.Header().Set("Content-Type", ctTextHTML)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// resetConnection closes the client connection with a TCP RST (linger 0)
// when the connection can be hijacked, and aborts the handler otherwise.
func resetConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func (s *Simulator) logRequest(r *http.Request, rt route, status int, outcome string) {
	ctx := r.Context()
	if !s.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	ds := ""
	if rt.ds != nil {
		ds = rt.ds.ID
	}
	// The path is logged without the query (keys live there) and, for
	// ECOS, without its key segment.
	s.log.DebugContext(ctx, "simulator request", "provider", rt.prov.p.ID, "dataset", ds,
		"method", r.Method, "path", redactPath(rt), "status", status, "outcome", outcome)
}

func redactPath(rt route) string {
	if rt.kind == routeECOS {
		seg := strings.SplitN(strings.TrimPrefix(rt.path, "/api/"), "/", 3)
		if len(seg) >= 2 {
			seg[1] = "REDACTED"
		}
		return "/api/" + strings.Join(seg, "/")
	}
	return rt.path
}
