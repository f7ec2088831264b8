package registry

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// WriteReport writes the budget table of a registry — one row per scope
// instance: datasets, daily demand, daily limit, headroom left, unknown
// values, stale sources — followed by what needs checking (확인 필요).
// r may be the partial Registry that Load returns beside its error.
func WriteReport(w io.Writer, r *Registry) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Budget per scope instance (probe headroom ×%d)\n", r.Defaults.ProbeHeadroom)
	t := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(t, "SCOPE\tDATASETS\tPROBES/DAY\tINGEST/DAY\tDEMAND/DAY\tLIMIT/DAY\tHEADROOM\tUNKNOWN\tSTALE")
	staleSubjects := map[string]bool{}
	for _, f := range r.Findings {
		if f.Kind == FindingStale {
			staleSubjects[f.Subject] = true
		}
	}
	for _, s := range r.Scopes {
		dem := s.Demand(r.Defaults.ProbeHeadroom)
		limit := s.Limit.DailyCapacity()
		limitStr, headroom := "-", "-"
		if !math.IsInf(limit, 1) {
			l := int(math.Floor(limit))
			limitStr = group(l)
			if l > 0 {
				headroom = fmt.Sprintf("%s (%d%%)", group(l-dem.Total), int(math.Floor(100*float64(l-dem.Total)/float64(l))))
			}
			if dem.Total > l {
				headroom += " OVER"
			}
		}
		unknown := strings.Join(s.Unknowns(), ",")
		if unknown == "" {
			unknown = "-"
		}
		stale := "-"
		if staleSubjects[s.Provider.ID+"/"+s.Scope] {
			stale = "stale"
		}
		fmt.Fprintf(t, "%s\t%d\t%s ×%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, len(s.Datasets),
			group(dem.Probes), dem.Headroom, group(dem.IngestCalls), group(dem.Total), limitStr, headroom, unknown, stale)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if len(r.Findings) > 0 {
		fmt.Fprintf(&b, "\n확인 필요 (needs checking): %d\n", len(r.Findings))
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
