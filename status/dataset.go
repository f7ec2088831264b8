package status

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
)

// Changes shown on a dataset's page: 50 unless ?changes= says (1 to 500).
const (
	defaultChanges = 50
	maxChanges     = 500
)

// termsView is a set of terms as the page shows them: every LicenseSpec
// field in words, empty where not declared.
type termsView struct {
	Type                string   `json:"type,omitempty"`
	CommercialUse       string   `json:"commercial_use,omitempty"`
	AttributionRequired string   `json:"attribution_required,omitempty"`
	Attribution         string   `json:"attribution,omitempty"`
	Redistribution      string   `json:"redistribution,omitempty"`
	ModificationAllowed string   `json:"modification_allowed,omitempty"`
	PIIColumns          []string `json:"pii_columns,omitempty"`
	PIISet              bool     `json:"-"`
	Note                string   `json:"note,omitempty"`
}

func termsOf(t registry.Terms) termsView {
	return termsView{Type: t.Type, CommercialUse: t.CommercialUse.String(), AttributionRequired: t.AttributionRequired.String(),
		Attribution: t.Attribution, Redistribution: t.Redistribution, ModificationAllowed: t.ModificationAllowed.String(),
		PIIColumns: t.PIIColumns, PIISet: t.PIIColumnsSet, Note: t.Note}
}

// termRow is one LicenseSpec field: the provider's value, the dataset's
// override and the value in effect.
type termRow struct {
	Field, Label               string
	Provider, Override, Effect string
}

// Notice is a fixed sentence a licence asks users to show, with its link.
type Notice struct {
	Kind     string `json:"kind"` // kogl or fred
	Text     string `json:"text"`
	Lang     string `json:"lang"`
	LinkText string `json:"link_text"`
	Link     string `json:"link"`
	// Source is the provider's page the data comes from (KOGL asks for a
	// link to it).
	Source string `json:"source,omitempty"`
}

// KOGL (공공누리) types and their conditions.
var koglTypes = map[string]string{
	"1": "출처표시",
	"2": "출처표시+상업적 이용금지",
	"3": "출처표시+변경금지",
	"4": "출처표시+상업적 이용금지+변경금지",
}

var koglType = regexp.MustCompile(`(?i)^\s*(?:KOGL|공공누리)[\s_-]*(?:type[\s_-]*|제)?([1-4])(?:유형)?\s*$`)

// KOGLType returns the KOGL type (1 to 4) a licence type names, or "".
func KOGLType(t string) string {
	if m := koglType.FindStringSubmatch(t); m != nil {
		return m[1]
	}
	return ""
}

// Notices returns the fixed notices a dataset's licence asks for: the
// KOGL type's source sentence and link, and its provider's own notice
// (registry.Provider.Notice: FRED's not-endorsed sentence), of kind the
// provider's id.
func Notices(reg *registry.Registry, ds *registry.Dataset) []Notice {
	var out []Notice
	p := reg.Provider(ds.Provider)
	name, source := ds.Provider, ""
	if p != nil {
		name = p.Name
		if p.TermsSource != nil {
			source = p.TermsSource.URL
		}
	}
	if n := KOGLType(ds.Terms.Type); n != "" {
		site := name
		if source != "" {
			site += "(" + source + ")"
		}
		out = append(out, Notice{Kind: "kogl", Lang: "ko",
			Text:     fmt.Sprintf("본 저작물은 공공누리 제%s유형(%s)에 따라 %s의 공공저작물을 이용하였습니다.", n, koglTypes[n], site),
			LinkText: fmt.Sprintf("공공누리 제%s유형: %s", n, koglTypes[n]),
			Link:     fmt.Sprintf("https://www.kogl.or.kr/info/licenseType%s.do", n),
			Source:   source})
	}
	if p != nil && p.Notice != nil {
		out = append(out, Notice{Kind: p.ID, Lang: p.Notice.Lang, Text: p.Notice.Text, LinkText: p.Notice.LinkText, Link: p.Notice.Link})
	}
	return out
}

type sourceLink struct {
	What       string
	URL        string
	VerifiedAt time.Time
}

type changeView struct {
	watch.Change
	Evidence string
}

type datasetPageView struct {
	Row         datasetView
	Dataset     *registry.Dataset
	Provider    *registry.Provider
	Scopes      []string
	Probe       string
	Terms       []termRow
	Attribution string
	Effective   termsView
	ProviderT   termsView
	OverrideT   termsView
	Sources     []sourceLink
	Notices     []Notice
	Changes     []changeView
	ChangeLimit int
	Days        []dayCell // newest first
	Location    string
}

func (s *Server) datasetDetail(ctx context.Context, id string, changes int) (datasetPageView, error) {
	reg := s.cfg.Registry
	ds := reg.Dataset(id)
	if ds == nil {
		return datasetPageView{}, errNotFound
	}
	now := s.now()
	states, err := s.cfg.Store.States(ctx, now, id)
	if err != nil {
		return datasetPageView{}, fmt.Errorf("reading the state of %s: %w", id, err)
	}
	ups, err := s.cfg.Store.Uptime(ctx, store.UptimeQuery{Datasets: []string{id}, Now: now, Days: barDays, Location: s.loc})
	if err != nil {
		return datasetPageView{}, fmt.Errorf("reading the uptime of %s: %w", id, err)
	}
	chs, err := s.cfg.Store.Changes(ctx, store.ChangeFilter{Datasets: []string{id}, Limit: changes})
	if err != nil {
		return datasetPageView{}, fmt.Errorf("reading the changes of %s: %w", id, err)
	}
	var st watch.DatasetState
	if len(states) > 0 {
		st = states[0]
	}
	var up watch.DatasetUptime
	if len(ups) > 0 {
		up = ups[0]
	}
	_, newest := s.lake(ctx)
	v := datasetPageView{Row: s.datasetRow(ds, st, up, newest, now), Dataset: ds, Provider: reg.Provider(ds.Provider),
		ChangeLimit: changes, Location: s.loc.String()}
	for _, sc := range reg.ScopesFor(id) {
		v.Scopes = append(v.Scopes, sc.ID)
	}
	if ds.Probe != nil {
		v.Probe = fmt.Sprintf("every %d minutes", ds.Probe.IntervalMinutes)
	}
	for i := len(v.Row.Days) - 1; i >= 0; i-- {
		v.Days = append(v.Days, v.Row.Days[i])
	}
	var pt registry.Terms
	if v.Provider != nil {
		pt = v.Provider.Terms
		if src := v.Provider.TermsSource; src != nil {
			v.Sources = append(v.Sources, sourceLink{What: "Terms of use of " + v.Provider.Name, URL: safeURL(src.URL), VerifiedAt: src.VerifiedAt})
		}
	}
	v.ProviderT, v.OverrideT, v.Effective = termsOf(pt), termsOf(ds.TermsOverride), termsOf(ds.Terms)
	v.Attribution = ds.Terms.Attribution
	v.Terms = termRows(v.ProviderT, v.OverrideT, v.Effective)
	v.Notices = Notices(reg, ds)
	for _, c := range chs {
		v.Changes = append(v.Changes, changeView{Change: c, Evidence: evidenceText(c.Evidence)})
	}
	return v, nil
}

func termRows(p, o, e termsView) []termRow {
	pii := func(t termsView) string {
		if !t.PIISet {
			return ""
		}
		if len(t.PIIColumns) == 0 {
			return "none"
		}
		return strings.Join(t.PIIColumns, ", ")
	}
	return []termRow{
		{"type", "Licence type", p.Type, o.Type, e.Type},
		{"commercial_use", "Commercial use", p.CommercialUse, o.CommercialUse, e.CommercialUse},
		{"attribution_required", "Attribution required", p.AttributionRequired, o.AttributionRequired, e.AttributionRequired},
		{"attribution", "Attribution", p.Attribution, o.Attribution, e.Attribution},
		{"redistribution", "Redistribution", p.Redistribution, o.Redistribution, e.Redistribution},
		{"modification_allowed", "Modification allowed", p.ModificationAllowed, o.ModificationAllowed, e.ModificationAllowed},
		{"pii_columns", "Columns with personal data", pii(p), pii(o), pii(e)},
		{"note", "Note", p.Note, o.Note, e.Note},
	}
}

func evidenceText(ev []watch.ProbeRef) string {
	if len(ev) == 0 {
		return ""
	}
	var parts []string
	for _, r := range ev {
		parts = append(parts, r.At.UTC().Format("15:04:05")+" "+outcomeText(r))
	}
	if len(parts) > 6 {
		parts = append(parts[:3], append([]string{"…"}, parts[len(parts)-2:]...)...)
	}
	return strings.Join(parts, "; ")
}

// safeURL returns u when it is an http(s) URL, else "" (a link the page
// will not make).
func safeURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
		return ""
	}
	return p.String()
}

var errNotFound = errors.New("not found")

// datasetRequest reads the detail of dataset id with the number of
// Changes the request asks for, for the page and its JSON alike; it
// answers the request itself, and returns false, for an id no dataset has,
// a wrong parameter or data that cannot be read.
func (s *Server) datasetRequest(w http.ResponseWriter, r *http.Request, id string) (datasetPageView, bool) {
	if !validID(id) || s.cfg.Registry.Dataset(id) == nil {
		s.errorPage(w, r, http.StatusNotFound, "No such dataset.")
		return datasetPageView{}, false
	}
	n, err := boundedInt(r, "changes", defaultChanges, 1, maxChanges)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, err.Error())
		return datasetPageView{}, false
	}
	v, err := s.datasetDetail(r.Context(), id, n)
	if err != nil {
		s.internal(w, r, err)
		return datasetPageView{}, false
	}
	return v, true
}

func (s *Server) datasetPage(w http.ResponseWriter, r *http.Request) {
	v, ok := s.datasetRequest(w, r, r.PathValue("id"))
	if !ok {
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	p := s.page(v.Row.Name, v)
	p.Feed = "/datasets/" + v.Row.ID + "/feed.atom"
	s.render(w, r, "dataset", p)
}
