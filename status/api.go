package status

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/watch"
)

// SummaryDoc is /api/v1/summary.json, in the spirit of Statuspage's
// /api/v2/summary.json: the page, its overall status, the providers as
// component groups and every dataset as a component.
type SummaryDoc struct {
	Page       PageDoc        `json:"page"`
	Status     StatusDoc      `json:"status"`
	Groups     []GroupDoc     `json:"groups"`
	Components []ComponentDoc `json:"components"`
	// UptimeRule says how the uptime figures are computed.
	UptimeRule string `json:"uptime_rule"`
}

// PageDoc names the page and when it was computed.
type PageDoc struct {
	Name      string    `json:"name"`
	UpdatedAt time.Time `json:"updated_at"`
	TimeZone  string    `json:"time_zone"`
}

// StatusDoc is the overall indicator: none, minor, major or unknown.
type StatusDoc struct {
	Indicator   string         `json:"indicator"`
	Description string         `json:"description"`
	Counts      map[string]int `json:"counts"`
}

// GroupDoc is a provider.
type GroupDoc struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Components []string `json:"components"`
}

// ComponentDoc is a dataset.
type ComponentDoc struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	GroupID string `json:"group_id"`
	// Status is Statuspage's word (operational, degraded_performance,
	// major_outage) or unknown; State is Sluice's (up, degraded, down,
	// unknown).
	Status      string        `json:"status"`
	State       watch.State   `json:"state"`
	Since       *time.Time    `json:"since"`
	Reason      string        `json:"reason,omitempty"`
	LastSuccess *time.Time    `json:"last_success"`
	LastProbe   *time.Time    `json:"last_probe"`
	Late        bool          `json:"late"`
	ProbeNewest string        `json:"probe_newest_period,omitempty"`
	Lake        *NewestPeriod `json:"lake_newest,omitempty"`
	Uptime      []windowView  `json:"uptime"`
	Link        string        `json:"link"`
}

// UptimeRule is the uptime arithmetic, as written on the pages.
const UptimeRule = "uptime = (up + degraded) / (up + degraded + down); time when the state was unknown " +
	"(never probed, our own rate limiting or the provider's, no recent probe) counts neither way. " +
	"An outage counts from the first failed probe of the streak that confirmed it; a failure never confirmed is not downtime."

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func component(d datasetView) ComponentDoc {
	return ComponentDoc{ID: d.ID, Name: d.Name, GroupID: d.Provider, Status: statuspageStatus(d.State), State: d.State,
		Since: timePtr(d.Since), Reason: d.Reason, LastSuccess: timePtr(d.LastSuccess), LastProbe: timePtr(d.LastProbe),
		Late: d.Late, ProbeNewest: d.ProbeNewest, Lake: d.Lake, Uptime: d.Windows, Link: "/datasets/" + d.ID}
}

func (s *Server) summaryJSON(w http.ResponseWriter, r *http.Request) {
	v, err := s.summary(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	doc := SummaryDoc{Page: PageDoc{Name: s.title, UpdatedAt: v.Now.UTC(), TimeZone: v.Location},
		Status:     StatusDoc{Indicator: v.Indicator, Description: v.Description, Counts: map[string]int{}},
		Groups:     []GroupDoc{},
		Components: []ComponentDoc{},
		UptimeRule: UptimeRule}
	for _, st := range watch.States {
		doc.Status.Counts[string(st)] = v.Counts[st]
	}
	for _, p := range v.Providers {
		g := GroupDoc{ID: p.ID, Name: p.Name}
		for _, d := range p.Datasets {
			g.Components = append(g.Components, d.ID)
			doc.Components = append(doc.Components, component(d))
		}
		doc.Groups = append(doc.Groups, g)
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, doc)
}

// DatasetDoc is /api/v1/datasets/{id}.json: the component, its 90 days,
// its Changes, its terms and the notices its licence asks for.
type DatasetDoc struct {
	Component ComponentDoc   `json:"component"`
	Provider  string         `json:"provider_name"`
	Days      []dayDoc       `json:"days"`
	Changes   []watch.Change `json:"changes"`
	Terms     TermsDoc       `json:"terms"`
	Notices   []Notice       `json:"notices"`
	Sources   []SourceDoc    `json:"sources"`
	UpdatedAt time.Time      `json:"updated_at"`
}

type dayDoc struct {
	Date     string  `json:"date"`
	Class    string  `json:"class"`
	Up       float64 `json:"up_seconds"`
	Degraded float64 `json:"degraded_seconds"`
	Down     float64 `json:"down_seconds"`
	Unknown  float64 `json:"unknown_seconds"`
	Uptime   string  `json:"uptime"`
}

// TermsDoc holds the provider's terms, the dataset's overrides and the
// terms in effect, exactly as the registry holds them.
type TermsDoc struct {
	Provider  termsView `json:"provider"`
	Override  termsView `json:"dataset_override"`
	Effective termsView `json:"effective"`
}

// SourceDoc is a link to where the terms were read.
type SourceDoc struct {
	What       string `json:"what"`
	URL        string `json:"url"`
	VerifiedAt string `json:"verified_at"`
}

func (s *Server) datasetJSON(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutSuffix(r.PathValue("file"), ".json")
	if !ok {
		id = "" // no dataset's: datasetRequest answers 404
	}
	v, ok := s.datasetRequest(w, r, id)
	if !ok {
		return
	}
	doc := DatasetDoc{Component: component(v.Row), Terms: TermsDoc{Provider: v.ProviderT, Override: v.OverrideT, Effective: v.Effective},
		Notices: v.Notices, Changes: []watch.Change{}, Sources: []SourceDoc{}, UpdatedAt: s.now().UTC()}
	if v.Notices == nil {
		doc.Notices = []Notice{}
	}
	if v.Provider != nil {
		doc.Provider = v.Provider.Name
	}
	for _, d := range v.Row.Days {
		doc.Days = append(doc.Days, dayDoc{Date: d.Date, Class: d.Class, Up: d.Up.Seconds(), Degraded: d.Degraded.Seconds(),
			Down: d.Down.Seconds(), Unknown: d.Unknown.Seconds(), Uptime: d.Uptime})
	}
	for _, c := range v.Changes {
		doc.Changes = append(doc.Changes, c.Change)
	}
	for _, src := range v.Sources {
		doc.Sources = append(doc.Sources, SourceDoc{What: src.What, URL: src.URL, VerifiedAt: src.VerifiedAt.Format(time.DateOnly)})
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, doc)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		http.Error(w, `{"error":{"code":500,"message":"internal error"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}
