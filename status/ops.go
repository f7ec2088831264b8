package status

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
)

// operator guards a handler with the operator token: a bearer token or a
// session cookie. Without either a browser (Accept: text/html) is sent to
// the login form, anything else gets 401.
func (s *Server) operator(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if !s.auth.set {
			s.errorPage(w, r, http.StatusNotFound, "The operator page is off: start the server with "+EnvOperatorToken+" or "+EnvOperatorTokenFile+".")
			return
		}
		ok, _, err := s.auth.authorized(r)
		if ok {
			next(w, r)
			return
		}
		if err != nil {
			w.Header().Set("Retry-After", retryAfter)
			s.errorPage(w, r, http.StatusTooManyRequests, "Too many wrong tokens from your address in the last minute; wait a minute.")
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice operator"`)
		if strings.Contains(r.Header.Get("Accept"), "text/html") && r.Header.Get("Authorization") == "" {
			http.Redirect(w, r, "/ops/login", http.StatusSeeOther)
			return
		}
		s.errorPage(w, r, http.StatusUnauthorized, "The operator page needs the operator token.")
	}
}

// retryAfter is the Retry-After of a login refused by the failure limit,
// in seconds: the window a wrong token counts in.
const retryAfter = "60"

type loginView struct {
	CSRF  string
	Error string
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !s.auth.set {
		s.errorPage(w, r, http.StatusNotFound, "The operator page is off: start the server with "+EnvOperatorToken+" or "+EnvOperatorTokenFile+".")
		return
	}
	if ok, _, _ := s.auth.authorized(r); ok {
		http.Redirect(w, r, "/ops", http.StatusSeeOther)
		return
	}
	s.showLogin(w, r, http.StatusOK, "")
}

// showLogin renders the form with a fresh CSRF token, also set as a
// cookie: the POST must carry both (double submit).
func (s *Server) showLogin(w http.ResponseWriter, r *http.Request, code int, msg string) {
	csrf := randomToken()
	s.auth.setCookie(w, r, csrfCookie, csrf, "/ops", 600)
	s.renderStatus(w, r, code, "login", s.page("Operator login", loginView{CSRF: csrf, Error: msg}))
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !s.auth.set {
		s.errorPage(w, r, http.StatusNotFound, "The operator page is off.")
		return
	}
	if r.URL.RawQuery != "" {
		// A token must never travel in a URL: refuse a login that put
		// anything there rather than risk it in logs and history.
		s.errorPage(w, r, http.StatusBadRequest, "The login form takes no query parameters; send the token in the form body.")
		return
	}
	if !sameOrigin(r) {
		s.errorPage(w, r, http.StatusForbidden, "Cross-site login refused.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "The login form could not be read.")
		return
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || !csrfOK(r.PostForm.Get(csrfField), c.Value) {
		s.showLogin(w, r, http.StatusForbidden, "The form expired; enter the token again.")
		return
	}
	client := s.auth.client(r)
	if err := s.auth.try(client); err != nil {
		w.Header().Set("Retry-After", retryAfter)
		s.showLogin(w, r, http.StatusTooManyRequests, "Too many wrong tokens from your address in the last minute; wait a minute.")
		return
	}
	if !s.auth.tokenOK(r.PostForm.Get(tokenField)) {
		s.showLogin(w, r, http.StatusUnauthorized, "That is not the operator token.")
		return
	}
	s.auth.succeeded(client)
	v, _ := s.auth.newSession()
	s.auth.setCookie(w, r, sessionCookie, v, "/", int(SessionTTL/time.Second))
	s.auth.setCookie(w, r, csrfCookie, "", "/ops", -1)
	http.Redirect(w, r, "/ops", http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !sameOrigin(r) {
		s.errorPage(w, r, http.StatusForbidden, "Cross-site logout refused.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	sess := s.auth.session(r)
	if sess == nil || !csrfOK(r.PostForm.Get(csrfField), sess.csrf) {
		s.errorPage(w, r, http.StatusForbidden, "Logout refused: no session, or the form is not this session's.")
		return
	}
	s.auth.endSession(r)
	s.auth.setCookie(w, r, sessionCookie, "", "/", -1)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// findingView is one 확인 필요 item.
type findingView struct {
	Kind, Subject, Msg, Where string
}

// sourceAge is one declared source and how long ago a person read it.
type sourceAge struct {
	Subject    string
	URL        string
	VerifiedAt time.Time
	Days       int
	Stale      bool
	Where      string
}

// budgetView is one scope instance's budget.
type budgetView struct {
	Scope     string
	Datasets  int
	Declared  string
	Effective string
	Unknown   string
	Probes    int
	Headroom  int
	Ingest    int
	Reserved  int
	LimitDay  string
	Limiter   string // "running", or why not
	Running   bool
	Today     int
	Quota     string // the limiter's daily quota, "—" when none
	Remaining string
	Factor    string
	Paused    string
	Operator  string
}

type opsView struct {
	Now          time.Time
	Location     string
	Findings     []findingView
	Sources      []sourceAge
	StaleAfter   int
	Budgets      []budgetView
	LimiterOn    bool
	Schedules    []Schedule
	SchedulesErr string
	Backfills    []Backfill
	BackfillsErr string
	Events       []watch.Event
	Changes      []changeView
	Coverage     []CoverageRow
	Columns      []Period
	CoverageNote string
	ChunksErr    string
	Lake         string
	LakeScanned  time.Time
	LakeTook     time.Duration
	LakeObjects  int
	LakeForeign  int
	EventDays    int
}

// Operator page bounds.
const (
	opsEvents      = 200
	opsChanges     = 100
	defaultYears   = 10
	maxYears       = 50
	limiterTimeout = 3 * time.Second
)

func (s *Server) opsData(ctx context.Context, r *http.Request) (opsView, error) {
	now := s.now()
	reg := s.cfg.Registry
	v := opsView{Now: now, Location: s.loc.String(), StaleAfter: reg.Defaults.StaleAfterDays, Lake: s.cfg.LakeDescription, EventDays: 7}
	for _, f := range reg.Findings {
		v.Findings = append(v.Findings, findingView{Kind: f.Kind, Subject: f.Subject, Msg: f.Msg, Where: f.Pos.String()})
	}
	v.Sources = sourceAges(reg, now)
	v.Budgets, v.LimiterOn = s.budgets(ctx, now)

	var wg sync.WaitGroup
	if s.cfg.Schedules != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc, err := s.cfg.Schedules.Schedules(ctx)
			if err != nil {
				s.log.Error("listing schedules for the operator page", "err", err)
				v.SchedulesErr = "Temporal's schedules could not be listed (see the status server's log)."
			}
			v.Schedules = sc
		}()
	} else {
		v.SchedulesErr = "No Temporal connection: schedules are not shown."
	}
	if s.cfg.Backfills != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bf, err := s.cfg.Backfills.Backfills(ctx)
			if err != nil {
				s.log.Error("listing backfills for the operator page", "err", err)
				v.BackfillsErr = "Running backfills could not be listed (see the status server's log)."
			}
			for i := range bf {
				bf[i].estimate(now)
			}
			v.Backfills = bf
		}()
	} else {
		v.BackfillsErr = "No Temporal connection: backfills are not shown."
	}
	var chunks []ChunkStatus
	if s.cfg.Manifests != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := s.cfg.Manifests.Chunks(ctx)
			if err != nil {
				s.log.Error("reading backfill manifests for the coverage map", "err", err)
				v.ChunksErr = "Backfill manifests could not be read: failed chunks are not shown."
			}
			chunks = c
		}()
	} else {
		v.ChunksErr = "Backfill manifests are not read yet: no cell is marked failed, and chunks without data count as missing."
	}
	wg.Wait()

	evs, err := s.cfg.Store.Events(ctx, store.EventFilter{Since: now.Add(-time.Duration(v.EventDays) * 24 * time.Hour), Limit: opsEvents})
	if err != nil {
		return v, fmt.Errorf("reading events: %w", err)
	}
	v.Events = evs
	chs, err := s.cfg.Store.Changes(ctx, store.ChangeFilter{Limit: opsChanges})
	if err != nil {
		return v, fmt.Errorf("reading changes: %w", err)
	}
	for _, c := range chs {
		v.Changes = append(v.Changes, changeView{Change: c, Evidence: evidenceText(c.Evidence)})
	}

	ix, _ := s.lake(ctx)
	if ix != nil {
		v.LakeScanned, v.LakeTook, v.LakeObjects, v.LakeForeign = ix.Scanned, ix.Took, ix.Objects, ix.Foreign
	}
	years, err := boundedInt(r, "years", defaultYears, 1, maxYears)
	if err != nil {
		return v, err
	}
	last := now.Year()
	first := last - years + 1
	if r.URL.Query().Get("years") == "" && ix != nil && !ix.Oldest.IsZero() && ix.Oldest.Year() < first {
		first = max(ix.Oldest.Year(), last-maxYears+1)
	}
	v.Columns = Years(first, last)
	v.Coverage = ix.CoverageMap(reg, reg.Datasets, v.Columns, chunks, now)
	return v, nil
}

// opsRequest reads the operator view a request asks for, the page and
// its JSON alike; it answers the request itself, and returns false, when
// a parameter is wrong or the data cannot be read.
func (s *Server) opsRequest(w http.ResponseWriter, r *http.Request) (opsView, bool) {
	if _, err := boundedInt(r, "years", defaultYears, 1, maxYears); err != nil {
		s.errorPage(w, r, http.StatusBadRequest, err.Error())
		return opsView{}, false
	}
	v, err := s.opsData(r.Context(), r)
	if err != nil {
		s.internal(w, r, err)
		return opsView{}, false
	}
	return v, true
}

func (s *Server) opsPage(w http.ResponseWriter, r *http.Request) {
	if v, ok := s.opsRequest(w, r); ok {
		s.render(w, r, "ops", s.operatorPage(r, "Operator", v))
	}
}

func (s *Server) opsJSON(w http.ResponseWriter, r *http.Request) {
	if v, ok := s.opsRequest(w, r); ok {
		writeJSON(w, http.StatusOK, v)
	}
}

func sourceAges(reg *registry.Registry, now time.Time) []sourceAge {
	var out []sourceAge
	add := func(subject string, src *registry.Source) {
		if src == nil || src.VerifiedAt.IsZero() {
			return
		}
		days := int(now.Sub(src.VerifiedAt).Hours() / 24)
		out = append(out, sourceAge{Subject: subject, URL: safeURL(src.URL), VerifiedAt: src.VerifiedAt, Days: days,
			Stale: days > reg.Defaults.StaleAfterDays, Where: src.Pos.String()})
	}
	for _, p := range reg.Providers {
		add(p.ID+" terms", p.TermsSource)
		for _, rl := range p.RateLimits {
			add(p.ID+"/"+rl.Scope+" rate limits", rl.Source)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Days > out[j].Days })
	return out
}

// describeDeclared writes a declared rate limit: each window, unknown
// ones with the default that applies.
func describeDeclared(decl, eff *registry.RateLimit) string {
	if decl == nil {
		return ""
	}
	if decl.AllUnknown {
		return "unknown (defaults apply: " + describeEffective(eff) + ")"
	}
	var parts []string
	for _, w := range decl.Windows {
		if w.Unknown {
			d := ""
			if e, ok := eff.Window(w.Length); ok {
				d = fmt.Sprintf(" → default %d", e.Count)
			}
			parts = append(parts, w.Field+": unknown"+d)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %d", w.Field, w.Count))
	}
	if decl.MinIntervalUnknown {
		parts = append(parts, "min_interval_seconds: unknown → default "+eff.MinInterval.String())
	} else if decl.MinInterval > 0 {
		parts = append(parts, "min_interval_seconds: "+fmt.Sprint(decl.MinInterval.Seconds()))
	}
	return strings.Join(parts, ", ")
}

func describeEffective(rl *registry.RateLimit) string {
	if rl == nil {
		return ""
	}
	var parts []string
	for _, w := range rl.Windows {
		parts = append(parts, fmt.Sprintf("%d per %s", w.Count, windowWord(w.Length)))
	}
	if rl.MinInterval > 0 {
		parts = append(parts, "interval "+rl.MinInterval.String())
	}
	return strings.Join(parts, ", ")
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// budgets reads every scope instance with datasets: its declared limits,
// what the gate reserves a day, and the limiter's count and factor.
func (s *Server) budgets(ctx context.Context, now time.Time) ([]budgetView, bool) {
	reg := s.cfg.Registry
	var scopes []*registry.ScopeInstance
	for _, sc := range reg.Scopes {
		if len(sc.Datasets) > 0 {
			scopes = append(scopes, sc)
		}
	}
	out := make([]budgetView, len(scopes))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, sc := range scopes {
		dem := sc.Demand(reg.Defaults.ProbeHeadroom)
		b := budgetView{Scope: sc.ID, Datasets: len(sc.Datasets), Declared: describeDeclared(sc.Declared, sc.Limit),
			Effective: describeEffective(sc.Limit), Unknown: strings.Join(sc.Unknowns(), ", "),
			Probes: dem.Probes, Headroom: dem.Headroom, Ingest: dem.IngestCalls, Reserved: dem.Total,
			LimitDay: "no daily bound", Limiter: "limiter not running", Quota: "—", Remaining: "—", Factor: "—", Paused: "—", Operator: "—"}
		if c := sc.Limit.DailyCapacity(); !math.IsInf(c, 1) {
			b.LimitDay = thousands(int(math.Floor(c)))
		}
		out[i] = b
		if s.cfg.Limiter == nil {
			continue
		}
		wg.Add(1)
		go func(i int, id string) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			qctx, cancel := context.WithTimeout(ctx, limiterTimeout)
			defer cancel()
			st, err := s.cfg.Limiter.State(qctx, id)
			if err != nil {
				var nf *serviceerror.NotFound
				if !errors.As(err, &nf) {
					s.log.Warn("querying a scope limiter for the operator page", "scope", id, "err", err)
					out[i].Limiter = "limiter state unavailable (Temporal did not answer; see the log)"
				}
				return // else "limiter not running": no such workflow
			}
			fillLimiter(&out[i], st)
		}(i, sc.ID)
	}
	wg.Wait()
	return out, s.cfg.Limiter != nil
}

func fillLimiter(b *budgetView, st ratelimit.State) {
	b.Running, b.Limiter = true, "running"
	switch {
	case st.Recovering:
		b.Limiter = "recovering the last run's state"
	case st.Ledger.Quarantines > 0:
		b.Limiter = fmt.Sprintf("running (quarantined %d time(s))", st.Ledger.Quarantines)
	}
	now := st.Now
	b.Today = st.Ledger.DayCount(now, st.Limits)
	if q := st.Limits.DailyQuota; q > 0 {
		b.Quota = thousands(q)
		b.Remaining = thousands(max(q-b.Today, 0))
	}
	b.Factor = fmt.Sprintf("%.3g", st.Factor)
	if st.Ledger.PausedUntil.After(now) {
		b.Paused = st.Ledger.PausedUntil.UTC().Format(time.RFC3339)
	}
	if st.Override != nil {
		b.Operator = "set"
	}
}

type coverageView struct {
	Dataset *registry.Dataset
	Rows    []CoverageRow // one per year, columns months
	Columns []string
	Note    string
	Years   int
}

// coveragePage shows one dataset's coverage month by month: a row per
// year.
func (s *Server) coveragePage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ds := s.cfg.Registry.Dataset(id)
	if !validID(id) || ds == nil {
		s.errorPage(w, r, http.StatusNotFound, "No such dataset.")
		return
	}
	years, err := boundedInt(r, "years", defaultYears, 1, maxYears)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, err.Error())
		return
	}
	now := s.now()
	ix, _ := s.lake(r.Context())
	var chunks []ChunkStatus
	if s.cfg.Manifests != nil {
		if c, err := s.cfg.Manifests.Chunks(r.Context()); err == nil {
			chunks = c
		}
	}
	v := coverageView{Dataset: ds, Years: years}
	for m := 1; m <= 12; m++ {
		v.Columns = append(v.Columns, time.Month(m).String()[:3])
	}
	for y := now.Year(); y > now.Year()-years; y-- {
		rows := ix.CoverageMap(s.cfg.Registry, []*registry.Dataset{ds}, Months(y), chunks, now)
		row := rows[0]
		row.Name = fmt.Sprint(y)
		v.Rows = append(v.Rows, row)
	}
	s.render(w, r, "coverage", s.operatorPage(r, "Coverage of "+ds.ID, v))
}

// windowWord is registry.WindowWord's word alone.
func windowWord(d time.Duration) string {
	w, _ := registry.WindowWord(d)
	return w
}
