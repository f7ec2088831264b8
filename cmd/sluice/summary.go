package main

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/sluicehq/sluice/planner"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/workflows"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// batchBounds returns, per provider, the least time its declared limits
// (at the rate scale) allow a daily batch of date over the selected
// datasets: the planner's makespan of the provider's slowest scope, from
// the first call's grant to the last's (planner.DailyWith). A plan that
// fails yields no bounds.
func batchBounds(reg *registry.Registry, date string, providers, datasets []string, scale float64) map[string]time.Duration {
	d, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return nil
	}
	p, err := planner.DailyWith(reg, planner.Input{From: d, To: d, Providers: providers, Datasets: datasets, RateScale: scale, Start: time.Now()})
	if err != nil {
		return nil
	}
	out := map[string]time.Duration{}
	for _, s := range p.Scopes {
		out[s.Provider] = max(out[s.Provider], s.Makespan)
	}
	return out
}

// writeSummary prints a batch's per-provider table — jobs, succeeded, no
// data, failed, raw and compressed bytes, elapsed since the batch started
// until the provider's last dataset completed, with bounds its bound (the
// least time the provider's declared limits allow the batch's calls,
// batchBounds) and elapsed over it, and, against the simulator, the limit
// violations it counted — then every failed dataset.
func writeSummary(w io.Writer, res workflows.DailyIngestResult, stats *simulator.Stats, bounds map[string]time.Duration) {
	rows := map[string]*summaryRow{}
	var order []string
	var total summaryRow
	for _, r := range res.Results {
		x := rows[r.Provider]
		if x == nil {
			x = &summaryRow{}
			rows[r.Provider] = x
			order = append(order, r.Provider)
		}
		elapsed := r.Finished.Sub(res.Started)
		x.add(r, elapsed)
		total.add(r, elapsed)
	}
	if stats != nil {
		for _, s := range stats.Scopes {
			if x := rows[s.Provider]; x != nil {
				x.violations += s.Violations
				total.violations += s.Violations
			}
		}
	}
	sort.Strings(order)
	header := "PROVIDER\tJOBS\tOK\tNO DATA\tFAILED\tRAW\tCOMPRESSED\tRATIO\tELAPSED\t"
	if bounds != nil {
		header += "BOUND\tVS BOUND\t"
	}
	if stats != nil {
		header += "VIOLATIONS\t"
	}
	t := newFigureTable(w, header)
	for _, p := range order {
		writeRow(t, p, *rows[p], stats != nil, bounds, bounds[p])
	}
	var longest time.Duration
	for _, p := range order {
		longest = max(longest, bounds[p])
	}
	writeRow(t, "total", total, stats != nil, bounds, longest)
	_ = t.Flush()
	fmt.Fprintf(w, "batch %s: %s elapsed\n", res.Date, res.Finished.Sub(res.Started).Round(10*time.Millisecond))
	writeViolations(w, stats)
	var failed []workflows.DatasetResult
	for _, r := range res.Results {
		if r.Status == workflows.StatusFailed {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\n%d dataset(s) failed (re-run them with sluice ingest --date %s --dataset ID):\n", len(failed), res.Date)
		for _, r := range failed {
			fmt.Fprintf(w, "  %s [%s] %s\n", r.Dataset, r.ErrorType, r.Error)
		}
	}
}

// writeViolations prints, for each scope the simulator counted a
// violation on, its first one: the limit, the rejected call and the
// accepted call before it, with when each reached the kernel, was read and
// was counted — what tells a call sent too early from one the simulator
// counted late.
func writeViolations(w io.Writer, stats *simulator.Stats) {
	if stats == nil {
		return
	}
	ids := slices.Sorted(maps.Keys(stats.Scopes))
	for _, id := range ids {
		s := stats.Scopes[id]
		v := s.FirstViolation
		if s.Violations == 0 || v == nil {
			continue
		}
		fmt.Fprintf(w, "violation on %s (%d in all): %s of %s; the call %s\n", id, s.Violations, v.Reason, v.Field, arrivalText(v.Call))
		if v.Previous != nil {
			fmt.Fprintf(w, "  the accepted call before it %s\n", arrivalText(*v.Previous))
		}
	}
}

// arrivalText describes a call's arrival at the simulator.
func arrivalText(a simulator.Arrival) string {
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("15:04:05.000000")
	}
	return fmt.Sprintf("(%s) kernel %s, read %s, counted %s", cmp.Or(a.Dataset, "dataset unknown"), stamp(a.Kernel), stamp(a.Read), stamp(a.Stamped))
}

// summaryRow is one provider's line of a batch summary, or the total.
type summaryRow struct {
	jobs, ok, noData, failed int
	raw, comp                int64
	elapsed                  time.Duration
	violations               int64
}

// add counts one dataset's result, which completed elapsed after the
// batch started.
func (x *summaryRow) add(r workflows.DatasetResult, elapsed time.Duration) {
	x.jobs++
	switch r.Status {
	case workflows.StatusOK:
		x.ok++
	case workflows.StatusNoData:
		x.noData++
	default:
		x.failed++
	}
	x.raw += r.RawBytes
	x.comp += r.CompressedBytes
	x.elapsed = max(x.elapsed, elapsed)
}

func writeRow(t io.Writer, name string, x summaryRow, withStats bool, bounds map[string]time.Duration, bound time.Duration) {
	ratio := "-"
	if x.comp > 0 {
		ratio = fmt.Sprintf("%.1f×", float64(x.raw)/float64(x.comp))
	}
	fmt.Fprintf(t, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t", name, x.jobs, x.ok, x.noData, x.failed, bytesIEC(x.raw), bytesIEC(x.comp), ratio, x.elapsed.Round(time.Millisecond))
	if bounds != nil {
		// A bound under a second is no yardstick: the batch's own
		// overhead (workflow tasks, round trips) dominates it.
		if bound >= time.Second {
			fmt.Fprintf(t, "%s\t%.2f×\t", bound.Round(100*time.Millisecond), x.elapsed.Seconds()/bound.Seconds())
		} else {
			fmt.Fprint(t, "-\t-\t")
		}
	}
	if withStats {
		fmt.Fprintf(t, "%d\t", x.violations)
	}
	fmt.Fprintln(t)
}

func bytesIEC(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
