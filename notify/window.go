package notify

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/registry"
)

// Window is a maintenance window: from Start to End (exclusive) the
// changes of its dataset — or of every dataset of its provider, when it
// names no dataset — are silenced. Windows come from the registry
// (a provider's or dataset's maintenance list) and from `sluice
// maintenance add`; the public status page shows them.
type Window struct {
	// ID names a window added with `sluice maintenance add` (empty for
	// the registry's).
	ID       string    `json:"id,omitempty"`
	Provider string    `json:"provider,omitempty"`
	Dataset  string    `json:"dataset,omitempty"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Reason   string    `json:"reason,omitempty"`
}

// Validate checks a window: it names a provider or a dataset and ends
// after it starts.
func (w Window) Validate() error {
	switch {
	case w.Provider == "" && w.Dataset == "":
		return fmt.Errorf("maintenance window: names neither a provider nor a dataset")
	case w.Start.IsZero() || w.End.IsZero():
		return fmt.Errorf("maintenance window of %s: start and end are required", w.Target())
	case !w.End.After(w.Start):
		return fmt.Errorf("maintenance window of %s: end %s is not after start %s", w.Target(),
			w.End.UTC().Format(time.RFC3339), w.Start.UTC().Format(time.RFC3339))
	}
	return nil
}

// Target names what the window covers: its dataset, else its provider.
func (w Window) Target() string {
	if w.Dataset != "" {
		return w.Dataset
	}
	return w.Provider
}

// Active reports whether the window is open at t.
func (w Window) Active(t time.Time) bool { return !t.Before(w.Start) && t.Before(w.End) }

// Covers reports whether the window silences a change of dataset (of
// provider) at t. A provider's window covers its every dataset and the
// provider's own changes (an exhausted quota).
func (w Window) Covers(provider, dataset string, t time.Time) bool {
	if !w.Active(t) {
		return false
	}
	if w.Dataset != "" {
		return w.Dataset == dataset
	}
	return w.Provider == provider
}

// Silence splits changes into those to notify and those a window
// silences (each at its own time).
func Silence(changes []Change, windows []Window) (kept, silenced []Change) {
	for _, c := range changes {
		quiet := false
		for _, w := range windows {
			if w.Covers(c.Provider, c.Dataset, c.At) {
				quiet = true
				break
			}
		}
		if quiet {
			silenced = append(silenced, c)
		} else {
			kept = append(kept, c)
		}
	}
	return kept, silenced
}

// ActiveAt returns the windows open at t or starting later, in the order
// given: what a status page shows.
func ActiveAt(windows []Window, t time.Time) []Window {
	var out []Window
	for _, w := range windows {
		if t.Before(w.End) {
			out = append(out, w)
		}
	}
	return out
}

// RegistryWindows returns the maintenance windows a registry declares,
// providers' first, each in declared order.
func RegistryWindows(reg *registry.Registry) []Window {
	if reg == nil {
		return nil
	}
	var out []Window
	for _, p := range reg.Providers {
		for _, m := range p.Maintenance {
			out = append(out, Window{Provider: p.ID, Start: m.Start.UTC(), End: m.End.UTC(), Reason: m.Reason})
		}
	}
	for _, ds := range reg.Datasets {
		for _, m := range ds.Maintenance {
			out = append(out, Window{Provider: ds.Provider, Dataset: ds.ID, Start: m.Start.UTC(), End: m.End.UTC(), Reason: m.Reason})
		}
	}
	return out
}
