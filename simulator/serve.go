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

// Reply is a provider's answer before faults shape its delivery.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
	// Outcome is a short word for the debug log and the counters: ok,
	// nodata, auth (counted as an authentication failure), limit, error.
	Outcome string
}

// NewReply returns a reply with its Content-Type.
func NewReply(status int, contentType string, body []byte, outcome string) *Reply {
	h := http.Header{}
	h.Set("Content-Type", contentType)
	return &Reply{Status: status, Header: h, Body: body, Outcome: outcome}
}

// JSONReply answers with a JSON object whose members members writes.
func JSONReply(status int, contentType, outcome string, members func(w *JSON)) *Reply {
	var w JSON
	w.Open('{')
	members(&w)
	w.Close('}')
	return NewReply(status, contentType, w.Bytes(), outcome)
}

const ctTextHTML = "text/html"

// effect is the combined result of every fault matching a request.
type effect struct {
	down, reset, fail bool
	errStatus         int
	delay             time.Duration
	slowBody          int
	truncateAfter     int
	rejectAt          float64
	// shapes are the indexes of the Shape faults whose dice came up, in
	// fault order: the first that applies to the request answers it.
	shapes []int
}

// effectFor rolls the fault dice for one request.
func (s *Simulator) effectFor(set *faultSet, provider, dataset string) effect {
	var e effect
	faults := set.faults
	if len(faults) == 0 {
		return e
	}
	var now time.Time
	for _, f := range faults {
		if f.timed() {
			now = s.now()
			break
		}
	}
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	for i, f := range faults {
		if !f.matches(provider, dataset) || (f.timed() && !f.active(now)) {
			continue
		}
		if f.Shape != "" && (f.ShapeRate == 0 || s.rng.Float64() < f.ShapeRate) {
			e.shapes = append(e.shapes, i)
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
	r = withArrival(r)
	if strings.HasPrefix(r.URL.Path, "/_sim/") || r.URL.Path == "/_sim" {
		s.control(w, r)
		return
	}
	rt, ok := s.route(r)
	if !ok {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("404 page not found\n"))
		return
	}
	c := &rt.Instance.counters
	c.requests.Add(1)
	dsID := ""
	if rt.Dataset != nil {
		dsID = rt.Dataset.ID
		if a, ok := r.Context().Value(arrivalKey{}).(*Arrival); ok {
			a.Dataset = dsID
		}
	}
	set := s.faults.Load()
	e := s.effectFor(set, rt.Instance.p.ID, dsID)
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
	rep := s.shape(set, e, r, rt)
	if rep == nil {
		rep = rt.Serve(r, rt, e.rejectAt)
	}
	if rep.Outcome == "auth" {
		c.authFailures.Add(1)
	}
	s.logRequest(r, rt, rep.Status, rep.Outcome)
	s.deliver(w, r, rep, e, c)
}

// shape answers a request with the first Shape fault that came up and
// applies to it, or returns nil. A fault whose Times are used up shapes
// nothing more.
func (s *Simulator) shape(set *faultSet, e effect, r *http.Request, rt Route) *Reply {
	if len(e.shapes) == 0 {
		return nil
	}
	shaper, _ := s.Provider(rt.Instance.conn).(Shaper)
	for _, i := range e.shapes {
		f := set.faults[i]
		common := commonReply(f.Shape, f.Status) != nil
		if !common && (shaper == nil || !shaper.ShapeApplies(f.Shape, r, rt)) {
			continue
		}
		if f.Times > 0 && set.shaped[i].Add(1) > int64(f.Times) {
			continue
		}
		var rep *Reply
		if common {
			rep = commonReply(f.Shape, f.Status)
		} else {
			rep = shaper.ShapeReply(f.Shape, r, rt, ShapeCall{Fault: f, Fraction: e.rejectAt})
		}
		if rep == nil {
			continue
		}
		rep.Outcome = "fault-shape"
		rt.Instance.counters.shaped.Add(1)
		if sp, ok := s.shapeSpec(rt.Instance.conn, f.Shape); ok && sp.SpendsQuota != nil && sp.SpendsQuota(f.Code) {
			s.spendQuota(rt.Instance, rt.Dataset)
		}
		return rep
	}
	return nil
}

// deliver writes the reply, slowly or truncated when a fault says so.
func (s *Simulator) deliver(w http.ResponseWriter, r *http.Request, rep *Reply, e effect, c *provCounters) {
	h := w.Header()
	for k, v := range rep.Header {
		h[k] = v
	}
	body := rep.Body
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rep.Status)
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
			if ac, ok := conn.(*arrivalConn); ok {
				conn = ac.Conn
			}
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func (s *Simulator) logRequest(r *http.Request, rt Route, status int, outcome string) {
	ctx := r.Context()
	if !s.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	ds := ""
	if rt.Dataset != nil {
		ds = rt.Dataset.ID
	}
	// The path is logged without the query (keys live there) and as the
	// provider redacted it (ECOS: without its key segment).
	path := rt.LogPath
	if path == "" {
		path = rt.Path
	}
	s.log.DebugContext(ctx, "simulator request", "provider", rt.Instance.p.ID, "dataset", ds,
		"method", r.Method, "path", path, "status", status, "outcome", outcome)
}

// route asks each provider, in connector-name order, to claim a request.
func (s *Simulator) route(r *http.Request) (Route, bool) {
	for _, sp := range s.served {
		if rt, ok := sp.p.Route(r); ok && rt.Instance != nil && rt.Serve != nil {
			return rt, true
		}
	}
	return Route{}, false
}

// BearerToken returns the token of an "Authorization: Bearer …" header.
func BearerToken(h string) string {
	h = strings.TrimSpace(h)
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}
