package status

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sluicehq/sluice/notify"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
)

// Days in the uptime bars.
const barDays = 90

// componentStatus is the Statuspage component status of a state: the
// words shown beside it, and the code in the JSON API (unknown is Sluice's
// own: Statuspage has no such status).
type componentStatus struct{ words, code string }

// componentStatusOf maps a state to its Statuspage component status.
func componentStatusOf(s watch.State) componentStatus {
	switch s {
	case watch.Up:
		return componentStatus{"Operational", "operational"}
	case watch.Degraded:
		return componentStatus{"Degraded performance", "degraded_performance"}
	case watch.Down:
		return componentStatus{"Major outage", "major_outage"}
	}
	return componentStatus{"No data", "unknown"}
}

// StatusWord is the Statuspage component status beside each state.
func StatusWord(s watch.State) string { return componentStatusOf(s).words }

// statuspageStatus is the Statuspage component status code of a state.
func statuspageStatus(s watch.State) string { return componentStatusOf(s).code }

// The day cells of the uptime bar, by the day's confirmed downtime.
const (
	cellNone   = "none"  // no downtime
	cellMinor  = "minor" // down less than an hour
	cellMajor  = "major" // down an hour or more
	cellNoData = "nodata"
)

// MajorDowntime is the downtime that turns a day's cell red.
const MajorDowntime = time.Hour

type dayCell struct {
	Date  string `json:"date"`
	Class string `json:"class"`
	Label string `json:"label"`
	// Down and the other times are the day's availability.
	Up, Degraded, Down, Unknown time.Duration `json:"-"`
	Uptime                      string        `json:"uptime"`
}

func cellOf(d watch.DayUptime) dayCell {
	c := dayCell{Date: d.Day.Format(time.DateOnly), Up: d.Up, Degraded: d.Degraded, Down: d.Down, Unknown: d.Unknown}
	ratio, ok := d.Uptime()
	c.Uptime = percent(ratio, ok)
	switch {
	case !ok:
		c.Class = cellNoData
		c.Label = c.Date + ": no data (no probe result known)"
	case d.Down >= MajorDowntime:
		c.Class = cellMajor
		c.Label = fmt.Sprintf("%s: down %s, uptime %s", c.Date, human(d.Down), c.Uptime)
	case d.Down > 0:
		c.Class = cellMinor
		c.Label = fmt.Sprintf("%s: down %s, uptime %s", c.Date, human(d.Down), c.Uptime)
	default:
		c.Class = cellNone
		c.Label = fmt.Sprintf("%s: no downtime, uptime %s", c.Date, c.Uptime)
	}
	if d.Unknown > 0 && ok {
		c.Label += fmt.Sprintf(" (%s unknown)", human(d.Unknown))
	}
	return c
}

// percent formats an uptime ratio rounded down to two decimals, so that
// 99.999 % never shows as 100 %.
func percent(ratio float64, ok bool) string {
	if !ok {
		return "no data"
	}
	v := math.Floor(ratio*10000) / 100
	return strconv.FormatFloat(v, 'f', 2, 64) + "%"
}

// human writes a duration in days, hours and minutes.
func human(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	d = d.Round(time.Minute)
	days, h, m := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour), int(d%time.Hour/time.Minute)
	var parts []string
	if days > 0 {
		parts = append(parts, fmt.Sprintf("%dd", days))
	}
	if h > 0 {
		parts = append(parts, fmt.Sprintf("%dh", h))
	}
	if m > 0 && days == 0 {
		parts = append(parts, fmt.Sprintf("%dmin", m))
	}
	return strings.Join(parts, " ")
}

type windowView struct {
	Label string `json:"window"`
	// Uptime is the figure as the pages show it: the percentage alone
	// when the window was observed (almost) whole, else followed by how
	// much of it was observed ("100.00% over 2min observed of 30 d"), so
	// that a dataset watched for two minutes never shows a bare 100.00%.
	Uptime string `json:"uptime"`
	// Ratio is the uptime, 0 to 1; null when no time is known.
	Ratio *float64 `json:"ratio"`
	Down  string   `json:"down"`
	// Coverage is the share of the window whose state is known (observed
	// up, degraded or down), 0 to 1; Observed says it in words.
	Coverage        float64 `json:"coverage"`
	ObservedSeconds float64 `json:"observed_seconds"`
	WindowSeconds   float64 `json:"window_seconds"`
	Observed        string  `json:"observed"`
	// Figure is the percentage alone and Partial whether the window was
	// observed less than FullCoverage of it (the pages then show Observed
	// beside Figure).
	Figure  string `json:"-"`
	Partial bool   `json:"partial"`
}

// FullCoverage is the share of a window that must be observed for its
// uptime to be shown without saying how much of it was observed.
const FullCoverage = 0.99

// windowOf is the view of one uptime window: the figure, and how much of
// the window it rests on.
func windowOf(w watch.WindowUptime) windowView {
	wv := windowView{Label: windowLabel(w.Window), Uptime: "no data", Figure: "no data", Down: human(w.Down),
		WindowSeconds: w.Window.Seconds(), ObservedSeconds: w.Known().Seconds()}
	if w.Window > 0 {
		wv.Coverage = min(float64(w.Known())/float64(w.Window), 1)
	}
	wv.Partial = wv.Coverage < FullCoverage
	wv.Observed = observedText(w.Known(), w.Window, wv.Coverage)
	if r, ok := w.Uptime(); ok {
		wv.Ratio = &r
		wv.Figure = percent(r, true)
		wv.Uptime = wv.Figure
		if wv.Partial {
			wv.Uptime += " over " + wv.Observed
		}
	}
	return wv
}

// observedText says how much of a window was observed: "2min observed
// of 30 d (<0.1%)", "nothing observed of 30 d".
func observedText(known, window time.Duration, coverage float64) string {
	if known <= 0 {
		return "nothing observed of " + windowLabel(window)
	}
	var share string
	switch v := math.Floor(coverage*1000) / 10; {
	case v < 0.1:
		share = "<0.1%"
	default:
		share = strconv.FormatFloat(v, 'f', 1, 64) + "%"
	}
	return fmt.Sprintf("%s observed of %s (%s)", human(known), windowLabel(window), share)
}

func windowLabel(w time.Duration) string {
	if w%(24*time.Hour) == 0 && w > 24*time.Hour {
		return fmt.Sprintf("%d d", int(w/(24*time.Hour)))
	}
	return fmt.Sprintf("%d h", int(w/time.Hour))
}

// datasetView is one dataset's row on the public page.
type datasetView struct {
	ID          string
	Name        string
	Provider    string
	State       watch.State
	Word        string
	Since       time.Time
	Reason      string
	LastSuccess time.Time
	LastProbe   time.Time
	ProbeNewest string
	Late        bool
	Lake        *NewestPeriod
	Days        []dayCell
	Windows     []windowView
	Probed      bool
}

type providerView struct {
	ID       string
	Name     string
	Datasets []datasetView
	Counts   map[watch.State]int
}

type summaryView struct {
	Now         time.Time
	Indicator   string // none, minor, major, unknown (Statuspage's indicator)
	Description string
	Counts      map[watch.State]int
	Providers   []providerView
	Location    string
	LakeScanned time.Time
	LakeOn      bool
	// Notices are the notices of the providers listed (registry
	// Provider.Notice), in registry order.
	Notices []*registry.Notice
	Windows []string
	// Maintenance are the maintenance windows open or to come (the
	// registry's and `sluice maintenance add`'s), by start.
	Maintenance []maintenanceView
}

// maintenanceView is a maintenance window on the public page.
type maintenanceView struct {
	Target string // a dataset's id or a provider's name
	Start  time.Time
	End    time.Time
	Reason string
	Open   bool
}

// maintenance returns the windows that have not ended at now, by start.
func (s *Server) maintenance(ctx context.Context, now time.Time) ([]maintenanceView, error) {
	stored, err := s.cfg.Store.Maintenance(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("reading maintenance windows: %w", err)
	}
	ws := append(notify.ActiveAt(notify.RegistryWindows(s.cfg.Registry), now), stored...)
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].Start.Before(ws[j].Start) })
	out := make([]maintenanceView, 0, len(ws))
	for _, w := range ws {
		target := w.Dataset
		if target == "" {
			target = w.Provider
			if p := s.cfg.Registry.Provider(w.Provider); p != nil && p.Name != "" {
				target = p.Name
			}
		}
		out = append(out, maintenanceView{Target: target, Start: w.Start, End: w.End, Reason: w.Reason, Open: w.Active(now)})
	}
	return out, nil
}

// publicReason says why a dataset is in its state from the state's
// structured fields only: the probes' messages (a connector's error
// text) never reach the public page.
func publicReason(st watch.DatasetState) string {
	switch st.State {
	case watch.Unknown:
		switch {
		case st.Probes == 0:
			return "never probed"
		case !st.ValidUntil.IsZero() && st.Since.Equal(st.ValidUntil):
			return "no probe result since " + st.LastProbe.UTC().Format("2006-01-02 15:04 UTC")
		case st.LastOutcome == watch.Throttled:
			return "probes held back by Sluice's own rate limiting (not an outage)"
		case st.LastOutcome == watch.RateLimited:
			return "the provider rate-limited our probe (not an outage)"
		}
		return "not known"
	case watch.Degraded:
		switch {
		case len(st.Streak) > 0 && st.Streak[0].Outcome.Good():
			return fmt.Sprintf("recovering: %d probe(s) answered, not yet confirmed", len(st.Streak))
		case len(st.Streak) > 0:
			return fmt.Sprintf("%d probe(s) failed (%s), not yet confirmed", len(st.Streak), outcomeText(st.Streak[len(st.Streak)-1]))
		case st.Slow:
			return "answering slowly"
		}
		return "degraded"
	case watch.Down:
		return "failing: " + outcomeText(watch.ProbeRef{Outcome: st.LastOutcome})
	}
	return ""
}

func outcomeText(r watch.ProbeRef) string {
	var s string
	switch r.Outcome {
	case watch.ProviderError:
		s = "the provider answers with an error"
	case watch.AuthFailed:
		s = "the provider refuses our credentials"
	case watch.Network:
		s = "no answer"
	case watch.OK, watch.NoData:
		s = "answering"
	default:
		s = string(r.Outcome)
	}
	if r.HTTPStatus != 0 {
		s += fmt.Sprintf(", HTTP %d", r.HTTPStatus)
	}
	return s
}

// summary gathers the public page's data.
func (s *Server) summary(ctx context.Context) (summaryView, error) {
	now := s.now()
	reg := s.cfg.Registry
	ids := make([]string, 0, len(reg.Datasets))
	for _, d := range reg.Datasets {
		ids = append(ids, d.ID)
	}
	states, err := s.cfg.Store.States(ctx, now, ids...)
	if err != nil {
		return summaryView{}, fmt.Errorf("reading states: %w", err)
	}
	byState := map[string]watch.DatasetState{}
	for _, st := range states {
		byState[st.Dataset] = st
	}
	ups, err := s.cfg.Store.Uptime(ctx, store.UptimeQuery{Datasets: ids, Now: now, Days: barDays, Location: s.loc})
	if err != nil {
		return summaryView{}, fmt.Errorf("reading uptime: %w", err)
	}
	byUp := map[string]watch.DatasetUptime{}
	for _, u := range ups {
		byUp[u.Dataset] = u
	}
	ix, newest := s.lake(ctx)
	v := summaryView{Now: now, Counts: map[watch.State]int{}, Location: s.loc.String(), LakeOn: s.cfg.Lake != nil}
	if ix != nil {
		v.LakeScanned = ix.Scanned
	}
	for _, w := range watch.DefaultWindows {
		v.Windows = append(v.Windows, windowLabel(w))
	}
	for _, p := range reg.Providers {
		pv := providerView{ID: p.ID, Name: p.Name, Counts: map[watch.State]int{}}
		for _, ds := range reg.DatasetsOf(p.ID) {
			dv := s.datasetRow(ds, byState[ds.ID], byUp[ds.ID], newest, now)
			pv.Counts[dv.State]++
			v.Counts[dv.State]++
			pv.Datasets = append(pv.Datasets, dv)
		}
		if len(pv.Datasets) == 0 {
			continue
		}
		if p.Notice != nil {
			v.Notices = append(v.Notices, p.Notice)
		}
		v.Providers = append(v.Providers, pv)
	}
	v.Indicator, v.Description = indicator(v.Counts, len(ids))
	if v.Maintenance, err = s.maintenance(ctx, now); err != nil {
		return summaryView{}, err
	}
	return v, nil
}

// indicator is Statuspage's page indicator (none, minor, major) and its
// description; "unknown" when no dataset's state is known.
func indicator(c map[watch.State]int, total int) (string, string) {
	switch {
	case c[watch.Down] > 0:
		return "major", fmt.Sprintf("%d of %d datasets down", c[watch.Down], total)
	case c[watch.Degraded] > 0:
		return "minor", fmt.Sprintf("%d of %d datasets degraded", c[watch.Degraded], total)
	case c[watch.Up] == 0:
		return "unknown", "No dataset's state is known yet"
	case c[watch.Unknown] > 0:
		return "none", fmt.Sprintf("%d datasets operational, %d not known", c[watch.Up], c[watch.Unknown])
	}
	return "none", "All datasets operational"
}

func (s *Server) datasetRow(ds *registry.Dataset, st watch.DatasetState, up watch.DatasetUptime, newest map[string]NewestPeriod, now time.Time) datasetView {
	if st.Dataset == "" {
		st = watch.NeverProbed(ds.ID)
	}
	dv := datasetView{ID: ds.ID, Name: ds.Name, Provider: ds.Provider, State: st.State, Word: StatusWord(st.State),
		Since: st.Since, Reason: publicReason(st), LastSuccess: st.LastSuccess, LastProbe: st.LastProbe,
		ProbeNewest: st.Newest, Late: st.Late, Probed: st.Probes > 0}
	if !dv.State.Valid() {
		dv.State = watch.Unknown
	}
	if np, ok := newest[ds.ID]; ok {
		dv.Lake = &np
	}
	days := up.Days
	if len(days) == 0 {
		for _, d := range watch.DayStarts(now, barDays, s.loc) {
			days = append(days, watch.DayUptime{Day: d})
		}
	}
	for _, d := range days {
		dv.Days = append(dv.Days, cellOf(d))
	}
	for i, w := range watch.DefaultWindows {
		wu := watch.WindowUptime{Window: w}
		if i < len(up.Windows) {
			wu = up.Windows[i]
		}
		dv.Windows = append(dv.Windows, windowOf(wu))
	}
	return dv
}

func (s *Server) summaryPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.summary(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	s.render(w, r, "summary", s.page("Status", v))
}

// hangul matches text that holds Korean letters.
var hangul = regexp.MustCompile(`\p{Hangul}`)

// langOf returns "ko" for text holding Hangul, else "".
func langOf(s string) string {
	if hangul.MatchString(s) {
		return "ko"
	}
	return ""
}

// validID reports whether s can be a dataset id (and so is worth a
// registry lookup): at most 128 bytes of letters, digits, '_', '-', '.'.
func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if r > unicode.MaxASCII || !(r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// boundedInt reads an integer query parameter within [lo, hi], def when
// absent; anything else is an error naming it.
func boundedInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s must be a whole number from %d to %d", name, lo, hi)
	}
	return n, nil
}

// barSummary is the text alternative of a bar: how many days fell in
// each colour.
func barSummary(days []dayCell) string {
	n := map[string]int{}
	for _, d := range days {
		n[d.Class]++
	}
	return fmt.Sprintf("Last %d days: %d without downtime, %d down less than an hour, %d down an hour or more, %d without data",
		len(days), n[cellNone], n[cellMinor], n[cellMajor], n[cellNoData])
}
