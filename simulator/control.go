package simulator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// control serves the control API:
//
//	GET  /_sim/health             {"ok":true}
//	GET  /_sim/stats              Stats
//	GET  /_sim/faults             the injected faults
//	POST /_sim/faults             replace them: a JSON list, one JSON object, or
//	                              text, one --fault spec a line (ParseFault)
//	DELETE /_sim/faults           remove them all
//	POST /_sim/reset              Reset: windows, quotas, statistics, blocks
//	GET  /_sim/credentials        the accepted test credentials by env-var name
//	…    /_sim/<connector>/…      a provider's own endpoints (Controller),
//	                              e.g. POST /_sim/kis/expire-tokens
func (s *Simulator) control(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/_sim/health" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	case path == "/_sim/stats" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, s.Stats())
	case path == "/_sim/faults" && r.Method == http.MethodGet:
		faults := s.Faults()
		if faults == nil {
			faults = []Fault{}
		}
		writeJSON(w, http.StatusOK, faults)
	case path == "/_sim/faults" && r.Method == http.MethodPost:
		faults, err := decodeFaultsAt(r.Body, s.now())
		if err == nil {
			err = s.SetFaults(faults)
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, s.Faults())
	case path == "/_sim/faults" && r.Method == http.MethodDelete:
		_ = s.SetFaults(nil)
		writeJSON(w, http.StatusOK, []Fault{})
	case path == "/_sim/reset" && r.Method == http.MethodPost:
		s.Reset()
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	case path == "/_sim/credentials" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, s.Credentials())
	default:
		if !s.providerControl(w, r, path) {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "unknown control endpoint " + r.Method + " " + r.URL.Path})
		}
	}
}

// providerControl hands /_sim/<connector>/… to that provider's Controller.
func (s *Simulator) providerControl(w http.ResponseWriter, r *http.Request, path string) bool {
	name, rest, _ := strings.Cut(strings.TrimPrefix(path, "/_sim/"), "/")
	c, ok := s.Provider(name).(Controller)
	return ok && c.Control(w, r, "/"+rest)
}

// WriteJSON answers a control request with v as indented JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

// decodeFaults reads a JSON list of faults, a single fault object, or
// lines of --fault specs (a client that knows no Fault type, such as
// connectortest, sends the flag's syntax); no line at all is no fault.
func decodeFaults(body io.Reader) ([]Fault, error) { return decodeFaultsAt(body, time.Now()) }

// decodeFaultsAt is decodeFaults with the specs' relative times ("+30s")
// counted from now (the simulator's clock).
func decodeFaultsAt(body io.Reader, now time.Time) ([]Fault, error) {
	data, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading faults: %w", err)
	}
	trimmed := strings.TrimSpace(string(data))
	if !strings.HasPrefix(trimmed, "{") && !strings.HasPrefix(trimmed, "[") {
		var faults []Fault
		for _, line := range strings.Split(trimmed, "\n") {
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			f, err := ParseFaultAt(line, now)
			if err != nil {
				return nil, err
			}
			faults = append(faults, f)
		}
		return faults, nil
	}
	dec := func(v any) error {
		d := json.NewDecoder(strings.NewReader(trimmed))
		d.DisallowUnknownFields()
		return d.Decode(v)
	}
	if strings.HasPrefix(trimmed, "{") {
		var f Fault
		if err := dec(&f); err != nil {
			return nil, fmt.Errorf("decoding fault: %w", err)
		}
		return []Fault{f}, nil
	}
	var faults []Fault
	if err := dec(&faults); err != nil {
		return nil, fmt.Errorf("decoding faults: %w", err)
	}
	return faults, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
