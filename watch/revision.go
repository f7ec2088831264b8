package watch

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/wire"
)

// MaxRevisions bounds the revision Changes one comparison records: a
// provider that re-bases a whole series revises every period, and one
// Change per period of ten years helps nobody. The last Change recorded
// says how many more there were.
const MaxRevisions = 200

// RevisionsOf compares the rows two lake objects of a dataset both hold —
// old from the earlier object, new from the one just landed, read with
// wire.Extract under the dataset's row facts — and returns one revision
// Change per row and value field whose value differs (DetectRevisions'
// comparison: as written after trimming spaces, plain decimals by value),
// sorted by period, keys and field, at most MaxRevisions of them, and how
// many more differed. Rows are matched by period and keys (wire.Row.ID);
// rows on one side only are not revisions. A value present on one side
// only counts as a revision to or from "". The Change's period is
// canonical when cycle reads it (ParsePeriod), else as the provider wrote
// it.
func RevisionsOf(at time.Time, dataset string, cycle Cycle, old, new []wire.Row) ([]Change, int) {
	before := make(map[string]wire.Row, len(old))
	for _, r := range old {
		if _, dup := before[r.ID()]; !dup {
			before[r.ID()] = r
		}
	}
	type diff struct {
		period, label, from, to string
	}
	var diffs []diff
	seen := make(map[string]bool, len(new))
	for _, r := range new {
		id := r.ID()
		o, ok := before[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		fields := make([]string, 0, len(r.Values))
		for f := range r.Values {
			fields = append(fields, f)
		}
		for f := range o.Values {
			if _, ok := r.Values[f]; !ok {
				fields = append(fields, f)
			}
		}
		sort.Strings(fields)
		period := r.Period
		if cycle.Valid() {
			if p, err := ParsePeriod(cycle, r.Period); err == nil {
				period = p.String()
			}
		}
		var keys []string
		for _, k := range r.Keys {
			if k != "" {
				keys = append(keys, k)
			}
		}
		for _, f := range fields {
			a, b := o.Values[f], r.Values[f]
			if sameValue(a, b) {
				continue
			}
			var label []string
			if len(keys) > 0 {
				label = append(label, "["+strings.Join(keys, ", ")+"]")
			}
			if len(fields) > 1 {
				label = append(label, f)
			}
			diffs = append(diffs, diff{period: period, label: strings.Join(label, " "),
				from: cleanText(strings.TrimSpace(a), MaxValueBytes), to: cleanText(strings.TrimSpace(b), MaxValueBytes)})
		}
	}
	sort.SliceStable(diffs, func(i, j int) bool {
		if diffs[i].period != diffs[j].period {
			return diffs[i].period < diffs[j].period
		}
		return diffs[i].label < diffs[j].label
	})
	omitted := max(len(diffs)-MaxRevisions, 0)
	diffs = diffs[:min(len(diffs), MaxRevisions)]
	out := make([]Change, 0, len(diffs))
	for i, d := range diffs {
		per := cleanText(d.period, MaxNewestBytes)
		what := per
		if d.label != "" {
			what += " " + d.label
		}
		summary := fmt.Sprintf("%s revised %s: %s → %s", dataset, what, quoteEmpty(d.from), quoteEmpty(d.to))
		if i == len(diffs)-1 && omitted > 0 {
			summary += fmt.Sprintf(" (and %d more revised values not recorded)", omitted)
		}
		out = append(out, Change{At: at, Dataset: dataset, Kind: ChangeRevision, Period: per, From: d.from, To: d.to, Summary: summary})
	}
	return out, omitted
}
