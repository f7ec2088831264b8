package status

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/watch"
)

// The Statuspage API v2 documents, in Statuspage's own shapes (the public
// /api/v2/status.json and /api/v2/summary.json every Statuspage page
// serves), so that aggregators and dashboards that read Statuspage read
// Sluice without code of their own. Nothing is added to the shapes:
// Sluice's own figures (state, uptime, coverage) are in /api/v1.
//
// The mapping (docs/status.md): each provider is a component group, each
// dataset a component of its provider's group. A dataset whose state is
// not known (never probed, probes held back by rate limiting, no recent
// probe) has no Statuspage status — Statuspage has no "unknown" — and is
// left out of the components rather than reported operational; the page
// status's description counts them. Sluice writes no incidents nor
// maintenance windows: both lists are empty.

// StatuspageStatusDoc is /api/v2/status.json.
type StatuspageStatusDoc struct {
	Page   StatuspagePage   `json:"page"`
	Status StatuspageStatus `json:"status"`
}

// StatuspageSummaryDoc is /api/v2/summary.json.
type StatuspageSummaryDoc struct {
	Page                  StatuspagePage        `json:"page"`
	Components            []StatuspageComponent `json:"components"`
	Incidents             []StatuspageIncident  `json:"incidents"`
	ScheduledMaintenances []StatuspageIncident  `json:"scheduled_maintenances"`
	Status                StatuspageStatus      `json:"status"`
}

// StatuspageComponentsDoc is /api/v2/components.json.
type StatuspageComponentsDoc struct {
	Page       StatuspagePage        `json:"page"`
	Components []StatuspageComponent `json:"components"`
}

// StatuspagePage is Statuspage's page object.
type StatuspagePage struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	URL       string    `json:"url"`
	TimeZone  string    `json:"time_zone"`
	UpdatedAt time.Time `json:"updated_at"`
}

// StatuspageStatus is the page's rollup: indicator none, minor, major or
// critical, and its description.
type StatuspageStatus struct {
	Indicator   string `json:"indicator"`
	Description string `json:"description"`
}

// StatuspageComponent is a component or, with Group set, a component
// group listing its components' ids.
type StatuspageComponent struct {
	ID                 string    `json:"id"`
	Name               string    `json:"name"`
	Status             string    `json:"status"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
	Position           int       `json:"position"`
	Description        *string   `json:"description"`
	Showcase           bool      `json:"showcase"`
	StartDate          *string   `json:"start_date"`
	GroupID            *string   `json:"group_id"`
	PageID             string    `json:"page_id"`
	Group              bool      `json:"group"`
	OnlyShowIfDegraded bool      `json:"only_show_if_degraded"`
	Components         []string  `json:"components,omitempty"`
}

// StatuspageIncident is an incident or a scheduled maintenance (which
// adds ScheduledFor and ScheduledUntil). Sluice serves none; the type
// holds Statuspage's shape for clients and tests.
type StatuspageIncident struct {
	ID              string                     `json:"id"`
	Name            string                     `json:"name"`
	Status          string                     `json:"status"`
	CreatedAt       time.Time                  `json:"created_at"`
	UpdatedAt       time.Time                  `json:"updated_at"`
	MonitoringAt    *time.Time                 `json:"monitoring_at"`
	ResolvedAt      *time.Time                 `json:"resolved_at"`
	Impact          string                     `json:"impact"`
	Shortlink       string                     `json:"shortlink"`
	StartedAt       time.Time                  `json:"started_at"`
	PageID          string                     `json:"page_id"`
	IncidentUpdates []StatuspageIncidentUpdate `json:"incident_updates"`
	Components      []StatuspageComponent      `json:"components"`
	ScheduledFor    *time.Time                 `json:"scheduled_for,omitempty"`
	ScheduledUntil  *time.Time                 `json:"scheduled_until,omitempty"`
}

// StatuspageIncidentUpdate is one update of an incident.
type StatuspageIncidentUpdate struct {
	ID                   string                        `json:"id"`
	Status               string                        `json:"status"`
	Body                 string                        `json:"body"`
	IncidentID           string                        `json:"incident_id"`
	CreatedAt            time.Time                     `json:"created_at"`
	UpdatedAt            time.Time                     `json:"updated_at"`
	DisplayAt            time.Time                     `json:"display_at"`
	AffectedComponents   []StatuspageAffectedComponent `json:"affected_components"`
	DeliverNotifications bool                          `json:"deliver_notifications"`
	CustomTweet          *string                       `json:"custom_tweet"`
	TweetID              *string                       `json:"tweet_id"`
}

// StatuspageAffectedComponent is a component an incident update names.
type StatuspageAffectedComponent struct {
	Code      string `json:"code"`
	Name      string `json:"name"`
	OldStatus string `json:"old_status"`
	NewStatus string `json:"new_status"`
}

// pageID is the page's Statuspage id: stable for a title and public
// URL, different between two Sluice pages that differ in either.
func (s *Server) pageID() string {
	h := sha256.Sum256([]byte("sluice-status-page\x00" + s.title + "\x00" + s.cfg.PublicURL))
	return hex.EncodeToString(h[:6])
}

// pageURL is the public URL of path: absolute under Config.PublicURL,
// else the path alone.
func (s *Server) pageURL(path string) string {
	return s.cfg.PublicURL + path
}

func (s *Server) statuspagePage(v summaryView) StatuspagePage {
	return StatuspagePage{ID: s.pageID(), Name: s.title, URL: s.pageURL("/"), TimeZone: v.Location, UpdatedAt: v.Now.UTC()}
}

// statuspageIndicator is the page's Statuspage indicator: major when a
// dataset is down, critical when half or more of the datasets whose state
// is known are; minor when one is degraded; else none (with a description
// that says how many are not known).
func statuspageIndicator(v summaryView) StatuspageStatus {
	ind, desc := v.Indicator, v.Description
	known := v.Counts[watch.Up] + v.Counts[watch.Degraded] + v.Counts[watch.Down]
	switch {
	case ind == "unknown":
		ind = "none"
	case ind == "major" && 2*v.Counts[watch.Down] >= known:
		ind = "critical"
	}
	return StatuspageStatus{Indicator: ind, Description: desc}
}

// severity orders Statuspage component statuses, the worst last.
var severity = map[string]int{"operational": 0, "degraded_performance": 1, "partial_outage": 2, "major_outage": 3}

// statuspageComponents lists the providers as groups and their datasets
// whose state is known as components, in the page's order.
func (s *Server) statuspageComponents(v summaryView) []StatuspageComponent {
	pageID := s.pageID()
	out := []StatuspageComponent{}
	gpos := 0
	for _, p := range v.Providers {
		var children []StatuspageComponent
		groupID := p.ID
		g := StatuspageComponent{ID: p.ID, Name: p.Name, Status: "operational", PageID: pageID, Group: true, Showcase: false}
		for _, d := range p.Datasets {
			if d.State == watch.Unknown {
				continue
			}
			c := StatuspageComponent{ID: d.ID, Name: d.Name, Status: statuspageStatus(d.State), Position: len(children) + 1,
				Showcase: true, GroupID: &groupID, PageID: pageID, UpdatedAt: d.Since.UTC(), CreatedAt: firstObserved(d)}
			if d.Reason != "" {
				r := d.Reason
				c.Description = &r
			}
			if c.UpdatedAt.IsZero() {
				c.UpdatedAt = v.Now.UTC()
			}
			if severity[c.Status] > severity[g.Status] {
				g.Status = c.Status
			}
			if g.UpdatedAt.Before(c.UpdatedAt) {
				g.UpdatedAt = c.UpdatedAt
			}
			if g.CreatedAt.IsZero() || c.CreatedAt.Before(g.CreatedAt) {
				g.CreatedAt = c.CreatedAt
			}
			g.Components = append(g.Components, c.ID)
			children = append(children, c)
		}
		if len(children) == 0 {
			continue
		}
		gpos++
		g.Position = gpos
		out = append(out, g)
		out = append(out, children...)
	}
	return out
}

// firstObserved is the first day of the uptime bar with a known state
// (Sluice keeps no creation time of a dataset; this is as far back as
// the raw timeline goes), else when its state began.
func firstObserved(d datasetView) time.Time {
	for _, c := range d.Days {
		if c.Up+c.Degraded+c.Down > 0 {
			if t, err := time.Parse(time.DateOnly, c.Date); err == nil {
				return t.UTC()
			}
		}
	}
	return d.Since.UTC()
}

// allowCrossOrigin marks an answer meant for other sites' scripts and
// pages (the feeds, the Statuspage API, the badges): public data that
// depends on no cookie.
func allowCrossOrigin(w http.ResponseWriter) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cross-Origin-Resource-Policy", "cross-origin")
}

// statuspageJSON answers one of the Statuspage v2 documents, built by doc
// from the summary.
func (s *Server) statuspageJSON(w http.ResponseWriter, r *http.Request, doc func(v summaryView) any) {
	v, err := s.summary(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	allowCrossOrigin(w)
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, doc(v))
}

func (s *Server) statuspageStatusJSON(w http.ResponseWriter, r *http.Request) {
	s.statuspageJSON(w, r, func(v summaryView) any {
		return StatuspageStatusDoc{Page: s.statuspagePage(v), Status: statuspageIndicator(v)}
	})
}

func (s *Server) statuspageSummaryJSON(w http.ResponseWriter, r *http.Request) {
	s.statuspageJSON(w, r, func(v summaryView) any {
		return StatuspageSummaryDoc{Page: s.statuspagePage(v), Components: s.statuspageComponents(v),
			Incidents: []StatuspageIncident{}, ScheduledMaintenances: []StatuspageIncident{}, Status: statuspageIndicator(v)}
	})
}

func (s *Server) statuspageComponentsJSON(w http.ResponseWriter, r *http.Request) {
	s.statuspageJSON(w, r, func(v summaryView) any {
		return StatuspageComponentsDoc{Page: s.statuspagePage(v), Components: s.statuspageComponents(v)}
	})
}
