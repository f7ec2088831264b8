package status

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/watch"
)

// The status badges: /badge/{provider}.svg and
// /badge/{provider}/{dataset}.svg, flat SVG in the manner of shields.io —
// the id on the left, the state on the right in its colour. A provider's
// state is its worst known dataset's (down, then degraded, then up);
// unknown when no dataset's state is known.

// badgeColours are the right half's colours by state.
var badgeColours = map[watch.State]string{
	watch.Up:       "#2e7d32",
	watch.Degraded: "#b26a00",
	watch.Down:     "#c62828",
	watch.Unknown:  "#616161",
}

// badgeCache is how long a badge may be kept: they are embedded in other
// sites' pages and READMEs, read far more often than the states change.
const badgeCache = "public, max-age=60"

// textWidth estimates the width in pixels of s set in 11px Verdana (the
// shields.io face): wide letters, narrow ones and the rest.
func textWidth(s string) int {
	w := 0.0
	for _, r := range s {
		switch {
		case strings.ContainsRune("iIl.:,;|!'", r):
			w += 3.5
		case strings.ContainsRune("mwMW", r):
			w += 10
		case r > 0x2E80: // CJK and Hangul: full width
			w += 11
		default:
			w += 7
		}
	}
	return int(w + 0.5)
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Badge returns the SVG of a badge saying label and the state's word.
func Badge(label string, st watch.State) []byte {
	if !st.Valid() {
		st = watch.Unknown
	}
	msg := string(st)
	lw, mw := textWidth(label)+12, textWidth(msg)+12
	colour := badgeColours[st]
	l, m := xmlEscape(label), xmlEscape(msg)
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="20" role="img" aria-label="%s: %s">`, lw+mw, l, m)
	fmt.Fprintf(&b, `<title>%s: %s</title>`, l, m)
	fmt.Fprintf(&b, `<rect width="%d" height="20" fill="#555"/><rect x="%d" width="%d" height="20" fill="%s"/>`, lw, lw, mw, colour)
	fmt.Fprintf(&b, `<g fill="#fff" text-anchor="middle" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">`)
	fmt.Fprintf(&b, `<text x="%d" y="14">%s</text><text x="%d" y="14">%s</text></g></svg>`, lw/2, l, lw+mw/2, m)
	b.WriteByte('\n')
	return b.Bytes()
}

// worstState is the provider's state from its datasets': the worst known.
func worstState(states []watch.State) watch.State {
	rank := map[watch.State]int{watch.Up: 1, watch.Degraded: 2, watch.Down: 3}
	out := watch.Unknown
	for _, s := range states {
		if rank[s] > rank[out] {
			out = s
		}
	}
	return out
}

func (s *Server) writeBadge(w http.ResponseWriter, r *http.Request, label string, st watch.State) {
	b := Badge(label, st)
	sum := sha256.Sum256(b)
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	h := w.Header()
	allowCrossOrigin(w)
	h.Set("Cache-Control", badgeCache)
	h.Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "image/svg+xml; charset=utf-8")
	_, _ = w.Write(b)
}

// badgeStates reads the current states of datasets.
func (s *Server) badgeStates(r *http.Request, ids []string) ([]watch.State, error) {
	states, err := s.cfg.Store.States(r.Context(), s.now(), ids...)
	if err != nil {
		return nil, fmt.Errorf("reading states for a badge: %w", err)
	}
	out := make([]watch.State, 0, len(states))
	for _, st := range states {
		out = append(out, st.State)
	}
	return out, nil
}

func (s *Server) providerBadge(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutSuffix(r.PathValue("file"), ".svg")
	p := s.cfg.Registry.Provider(id)
	if !ok || !validID(id) || p == nil || len(s.cfg.Registry.DatasetsOf(id)) == 0 {
		s.errorPage(w, r, http.StatusNotFound, "No such provider.")
		return
	}
	var ids []string
	for _, d := range s.cfg.Registry.DatasetsOf(id) {
		ids = append(ids, d.ID)
	}
	states, err := s.badgeStates(r, ids)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.writeBadge(w, r, id, worstState(states))
}

func (s *Server) datasetBadge(w http.ResponseWriter, r *http.Request) {
	prov := r.PathValue("provider")
	id, ok := strings.CutSuffix(r.PathValue("file"), ".svg")
	if !ok || !validID(id) || !validID(prov) {
		s.errorPage(w, r, http.StatusNotFound, "No such dataset.")
		return
	}
	ds := s.cfg.Registry.Dataset(id)
	if ds == nil || ds.Provider != prov {
		s.errorPage(w, r, http.StatusNotFound, "No such dataset.")
		return
	}
	states, err := s.badgeStates(r, []string{id})
	if err != nil {
		s.internal(w, r, err)
		return
	}
	st := watch.Unknown
	if len(states) == 1 {
		st = states[0]
	}
	s.writeBadge(w, r, id, st)
}
