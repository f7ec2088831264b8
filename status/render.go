package status

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/watch"
)

// pageData wraps every page's view with what the layout needs.
type pageData struct {
	Title    string
	Site     string
	Now      time.Time
	Operator bool   // the operator is logged in (shows the logout form)
	CSRF     string // the session's CSRF token for the logout form
	OpsOn    bool   // an operator token is configured
	Feed     string // the page's own Atom feed beside /feed.atom ("": none)
	View     any
}

// page is a public page's data: the same for everyone, whatever cookie
// comes with the request, so that a cache may share it. It never holds a
// session's CSRF token.
func (s *Server) page(title string, view any) pageData {
	return pageData{Title: title, Site: s.title, Now: s.now(), View: view, OpsOn: s.auth.set}
}

// operatorPage is an operator page's data: with a session cookie, the
// logout form and its CSRF token. Only for answers marked no-store.
func (s *Server) operatorPage(r *http.Request, title string, view any) pageData {
	p := s.page(title, view)
	if sess := s.auth.session(r); sess != nil {
		p.Operator, p.CSRF = true, sess.csrf
	}
	return p
}

func parseTemplates() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"lang":  langOf,
		"human": human,
		"when": func(t time.Time, loc *time.Location) string {
			if t.IsZero() {
				return "—"
			}
			return t.In(loc).Format("2006-01-02 15:04 MST")
		},
		"iso": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format(time.RFC3339)
		},
		"ago": func(t, now time.Time) string {
			if t.IsZero() {
				return ""
			}
			d := now.Sub(t)
			if d < 0 {
				return "in " + human(-d)
			}
			if d < time.Minute {
				return "just now"
			}
			return human(d) + " ago"
		},
		"utc":        func() *time.Location { return time.UTC },
		"stateClass": func(s watch.State) string { return "state-" + string(s) },
		"stateWord":  StatusWord,
		"yesno": func(s string) string {
			switch s {
			case "true":
				return "yes"
			case "false":
				return "no"
			}
			return s
		},
		"or": func(s, def string) string {
			if s == "" {
				return def
			}
			return s
		},
		"count": func(m map[watch.State]int, s string) int { return m[watch.State(s)] },
		"covSymbol": func(c Coverage) string {
			switch c {
			case Complete:
				return "✓"
			case Partial:
				return "◐"
			case Missing:
				return "✗"
			case Failed:
				return "!"
			}
			return "·"
		},
		"join":       strings.Join,
		"barSummary": barSummary,
		"uptimeRule": func() string { return UptimeRule },
		"inc":        func(i int) int { return i + 1 },
	}
	out := map[string]*template.Template{}
	for _, name := range []string{"summary", "dataset", "ops", "coverage", "login", "error"} {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parsing the %s template: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// render executes a page into a buffer first, so that a failing template
// sends a clean error instead of half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, data pageData) {
	s.renderStatus(w, r, http.StatusOK, name, data)
}

func (s *Server) renderStatus(w http.ResponseWriter, r *http.Request, code int, name string, data pageData) {
	var buf bytes.Buffer
	if err := s.tmpl[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		s.log.Error("rendering a status page", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

type errorView struct {
	Code    int
	Message string
}

// errorPage answers with a short page saying message, which must hold
// nothing internal.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, code int, message string) {
	w.Header().Set("Cache-Control", "no-store")
	if strings.HasPrefix(r.URL.Path, "/api/") || strings.HasSuffix(r.URL.Path, ".json") {
		writeJSON(w, code, map[string]any{"error": map[string]any{"code": code, "message": message}})
		return
	}
	p := s.page(http.StatusText(code), errorView{Code: code, Message: message})
	if strings.HasPrefix(r.URL.Path, "/ops/") || r.URL.Path == "/ops" {
		p = s.operatorPage(r, p.Title, p.View)
	}
	s.renderStatus(w, r, code, "error", p)
}

// internal logs err and answers 503 with nothing of it.
func (s *Server) internal(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("status page", "path", r.URL.Path, "err", err)
	s.errorPage(w, r, http.StatusServiceUnavailable, "The status data cannot be read right now. Try again in a minute.")
}
