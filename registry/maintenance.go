package registry

import (
	"time"

	"gopkg.in/yaml.v3"
)

// Maintenance is a declared maintenance window of a provider
// (providers[].maintenance) or of one dataset (its file's maintenance):
// notifications of its changes are silenced from Start to End
// (exclusive), and the public status page shows it.
type Maintenance struct {
	Start  time.Time
	End    time.Time
	Reason string
	Pos    Pos
}

// maxMaintenance bounds the windows one provider or dataset declares.
const maxMaintenance = 100

// maintenance reads a list of windows: start and end (RFC 3339 times with
// an offset), end after start, and an optional reason.
func (d *decoder) maintenance(n *yaml.Node, path string) []Maintenance {
	var out []Maintenance
	d.sequence(n, path, func(i int, n *yaml.Node, p string) {
		if i >= maxMaintenance {
			if i == maxMaintenance {
				d.errorf(n, p, "more than %d maintenance windows", maxMaintenance)
			}
			return
		}
		m := Maintenance{Pos: d.pos(n, p)}
		present := d.mapping(n, p, []field{
			{"start", func(n *yaml.Node, p string) { m.Start = d.timestamp(n, p) }},
			{"end", func(n *yaml.Node, p string) { m.End = d.timestamp(n, p) }},
			{"reason", func(n *yaml.Node, p string) { m.Reason = truncate(d.str(n, p), 200) }},
		})
		if present == nil {
			return
		}
		for _, f := range []string{"start", "end"} {
			if present[f] == nil {
				d.errorf(n, p, "missing field %q: a maintenance window needs a start and an end", f)
				return
			}
		}
		if m.Start.IsZero() || m.End.IsZero() {
			return
		}
		if !m.End.After(m.Start) {
			d.errorf(present["end"], join(p, "end"), "end %s is not after start %s",
				m.End.Format(time.RFC3339), m.Start.Format(time.RFC3339))
			return
		}
		out = append(out, m)
	})
	return out
}

// timestamp parses an RFC 3339 time with its offset (2026-12-08T01:00:00+09:00).
func (d *decoder) timestamp(n *yaml.Node, path string) time.Time {
	s := d.str(n, path)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		d.errorf(n, path, "invalid time %q: expected RFC 3339 with an offset, such as 2026-12-08T01:00:00+09:00", truncate(s, 60))
		return time.Time{}
	}
	return t
}
