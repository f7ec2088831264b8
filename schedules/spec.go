package schedules

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/workflows"
)

// Defaults of Options.
const (
	// DefaultCatchupWindow is how late a missed run may still be taken
	// after the Temporal service was down: four days, so that an outage
	// from a Friday evening to a Monday morning runs every missed date.
	DefaultCatchupWindow = 96 * time.Hour
	// DefaultTaskQueue is the task queue of the runs' workflows.
	DefaultTaskQueue = workflows.TaskQueue
	// MinCatchupWindow is the shortest window the server honours (it
	// raises anything shorter to 10 s).
	MinCatchupWindow = 10 * time.Second
)

// Overlap is the overlap policy of every schedule Sluice owns: a group
// never runs twice at once; a run that fires while the previous one is
// still going waits for it, and so does each further one.
const Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ALL

// Memo marking the schedules Sluice owns.
const (
	MemoOwner = "sluice-managed-by"
	OwnerName = "sluice"
)

// Options tune what Sluice wants of every schedule.
type Options struct {
	// TaskQueue is the task queue of the runs (DefaultTaskQueue).
	TaskQueue string
	// CatchupWindow is the schedules' catch-up window
	// (DefaultCatchupWindow); at least MinCatchupWindow.
	CatchupWindow time.Duration
}

func (o Options) resolve() (Options, error) {
	if o.TaskQueue == "" {
		o.TaskQueue = DefaultTaskQueue
	}
	if o.CatchupWindow == 0 {
		o.CatchupWindow = DefaultCatchupWindow
	}
	if o.CatchupWindow < MinCatchupWindow {
		return o, fmt.Errorf("catch-up window %s: the server takes at least %s", o.CatchupWindow, MinCatchupWindow)
	}
	return o, nil
}

// Want is one schedule the registry asks for: a provider's datasets that
// share a schedule.
type Want struct {
	ID       string
	Provider string
	Timezone string   // the provider's IANA timezone: the schedule fires in it
	Cron     string   // the registry's schedule line(s), joined by " | " when several spell the same times
	Datasets []string // sorted
	// Calendars and Intervals are the cron as Temporal matches it.
	Calendars []client.ScheduleCalendarSpec
	Intervals []client.ScheduleIntervalSpec

	TaskQueue     string
	CatchupWindow time.Duration
}

// Input is the workflow input of the schedule's runs.
func (w Want) Input() workflows.DailyIngestInput {
	return workflows.DailyIngestInput{
		Providers: []string{w.Provider},
		Datasets:  slices.Clone(w.Datasets),
		Schedule:  &workflows.ScheduleRun{ID: w.ID, Timezone: w.Timezone},
	}
}

// Summary is the one line the Web UI shows for the schedule's runs.
func (w Want) Summary() string {
	return fmt.Sprintf("daily ingest of %d %s dataset(s), %s %s", len(w.Datasets), w.Provider, w.Cron, w.Timezone)
}

// Spec is the Temporal schedule spec of the want.
func (w Want) Spec() client.ScheduleSpec {
	return client.ScheduleSpec{Calendars: w.Calendars, Intervals: w.Intervals, TimeZoneName: w.Timezone}
}

// Wanted lists the schedules the registry asks for, sorted by id: one
// per provider and schedule (datasets whose cron lines fire at the same
// times share one), for every dataset with an ingest schedule and a
// request.
func Wanted(reg *registry.Registry, opts Options) ([]Want, error) {
	opts, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	type group struct {
		w     Want
		crons map[string]bool
	}
	groups := map[string]*group{}
	for _, ds := range reg.Datasets {
		if ds.Ingest == nil || !ds.Request.Declared() {
			continue
		}
		pr := reg.Provider(ds.Provider)
		if pr == nil {
			return nil, fmt.Errorf("dataset %s: unknown provider %q", ds.ID, ds.Provider)
		}
		cals, ivs, err := Calendars(ds.Ingest.Cron, ds.Ingest.Schedule)
		if err != nil {
			return nil, fmt.Errorf("dataset %s (%s): %w", ds.ID, ds.Ingest.Pos, err)
		}
		key := pr.ID + "\x00" + canonical(cals, ivs)
		g := groups[key]
		if g == nil {
			g = &group{w: Want{Provider: pr.ID, Timezone: pr.Timezone, Calendars: cals, Intervals: ivs,
				TaskQueue: opts.TaskQueue, CatchupWindow: opts.CatchupWindow}, crons: map[string]bool{}}
			g.w.ID = "sluice-" + pr.ID + "-" + slug(cals, ivs)
			groups[key] = g
		}
		g.w.Datasets = append(g.w.Datasets, ds.ID)
		g.crons[ds.Ingest.Schedule] = true
	}
	var out []Want
	ids := map[string]int{}
	for _, g := range groups {
		var crons []string
		for c := range g.crons {
			crons = append(crons, c)
		}
		sort.Strings(crons)
		g.w.Cron = strings.Join(crons, " | ")
		comment := truncate(g.w.Cron, 180)
		for i := range g.w.Calendars {
			g.w.Calendars[i].Comment = comment
		}
		sort.Strings(g.w.Datasets)
		out = append(out, g.w)
		ids[g.w.ID]++
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	for _, w := range out {
		if ids[w.ID] > 1 {
			return nil, fmt.Errorf("two schedules of %s would share the id %s: give their datasets one schedule line", w.Provider, w.ID)
		}
	}
	return out, nil
}

// Calendars turns a registry cron into the calendar (or interval) specs
// Temporal matches, field by field. Standard cron fires when either the
// day of month or the day of week matches if both are restricted, where
// a Temporal calendar needs both: such a line becomes two calendars.
// @every becomes an interval.
func Calendars(s cron.Schedule, line string) ([]client.ScheduleCalendarSpec, []client.ScheduleIntervalSpec, error) {
	switch s := s.(type) {
	case *cron.SpecSchedule:
		const star = 1 << 63
		base := client.ScheduleCalendarSpec{
			Second:     ranges(s.Second &^ star),
			Minute:     ranges(s.Minute &^ star),
			Hour:       ranges(s.Hour &^ star),
			DayOfMonth: ranges(s.Dom &^ star),
			Month:      ranges(s.Month &^ star),
			DayOfWeek:  ranges(s.Dow &^ star),
		}
		if s.Second&^star != 1 {
			return nil, nil, fmt.Errorf("schedule %q fires at a second other than :00", line)
		}
		if s.Dom&star == 0 && s.Dow&star == 0 {
			byDom, byDow := base, base
			byDom.DayOfWeek = []client.ScheduleRange{{Start: 0, End: 6}}
			byDow.DayOfMonth = []client.ScheduleRange{{Start: 1, End: 31}}
			return []client.ScheduleCalendarSpec{byDom, byDow}, nil, nil
		}
		return []client.ScheduleCalendarSpec{base}, nil, nil
	case cron.ConstantDelaySchedule:
		if s.Delay < time.Minute {
			return nil, nil, fmt.Errorf("schedule %q fires more often than once a minute", line)
		}
		return nil, []client.ScheduleIntervalSpec{{Every: s.Delay}}, nil
	}
	return nil, nil, fmt.Errorf("schedule %q: not a cron line Sluice can turn into a Temporal schedule", line)
}

// ranges turns a bit set into Temporal ranges: each run of consecutive
// values one range.
func ranges(set uint64) []client.ScheduleRange {
	var out []client.ScheduleRange
	for v := 0; v < 64; v++ {
		if set&(1<<uint(v)) == 0 {
			continue
		}
		end := v
		for end+1 < 64 && set&(1<<uint(end+1)) != 0 {
			end++
		}
		out = append(out, client.ScheduleRange{Start: v, End: end})
		v = end
	}
	return out
}

// field is one calendar field's values, read from Temporal ranges (an
// end before the start is the start; a step of 0 is 1, as the server
// cleans them); an empty year field is every year.
func field(rs []client.ScheduleRange, lo, hi int) uint64 {
	var set uint64
	for _, r := range rs {
		end, step := r.End, r.Step
		if end < r.Start {
			end = r.Start
		}
		if step <= 0 {
			step = 1
		}
		for v := max(r.Start, lo); v <= min(end, hi) && v < 64; v += step {
			set |= 1 << uint(v)
		}
	}
	return set
}

// canonical writes calendars and intervals so that two specs that match
// the same times (however their ranges are cut) and carry the same
// comments write the same string.
func canonical(cals []client.ScheduleCalendarSpec, ivs []client.ScheduleIntervalSpec) string {
	var parts []string
	for _, c := range cals {
		years := "*"
		if len(c.Year) > 0 {
			var ys []string
			for _, r := range c.Year {
				ys = append(ys, fmt.Sprintf("%d-%d/%d", r.Start, r.End, r.Step))
			}
			years = strings.Join(ys, ",")
		}
		parts = append(parts, fmt.Sprintf("cal s%x m%x h%x d%x mo%x w%x y%s", field(c.Second, 0, 59), field(c.Minute, 0, 59),
			field(c.Hour, 0, 23), field(c.DayOfMonth, 1, 31), field(c.Month, 1, 12), field(c.DayOfWeek, 0, 6), years))
	}
	for _, iv := range ivs {
		parts = append(parts, fmt.Sprintf("every %s+%s", iv.Every, iv.Offset))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

var weekdays = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// slug names a spec readably for a schedule id: "0900-daily",
// "1830-mon-fri", "0800-tue-sat", "every-6h"; anything else spells its
// fields ("m0.30-h9-d1-mox-wx").
func slug(cals []client.ScheduleCalendarSpec, ivs []client.ScheduleIntervalSpec) string {
	var parts []string
	for _, iv := range ivs {
		parts = append(parts, "every-"+strings.TrimSuffix(strings.TrimSuffix(iv.Every.String(), "0s"), "0m"))
	}
	for _, c := range cals {
		m, h := field(c.Minute, 0, 59), field(c.Hour, 0, 23)
		d, mo, w := field(c.DayOfMonth, 1, 31), field(c.Month, 1, 12), field(c.DayOfWeek, 0, 6)
		const allDom, allMonths, allDays = uint64(0xfffffffe), uint64(0x1ffe), uint64(0x7f)
		if bits.OnesCount64(m) == 1 && bits.OnesCount64(h) == 1 && d == allDom && mo == allMonths {
			when := fmt.Sprintf("%02d%02d", bits.TrailingZeros64(h), bits.TrailingZeros64(m))
			if w == allDays {
				parts = append(parts, when+"-daily")
			} else {
				parts = append(parts, when+"-"+spell(w, 0, 6, func(v int) string { return weekdays[v] }))
			}
			continue
		}
		num := func(v int) string { return strconv.Itoa(v) }
		f := func(prefix string, set, all uint64, lo, hi int) string {
			if set == all {
				return prefix + "x"
			}
			return prefix + spell(set, lo, hi, num)
		}
		parts = append(parts, strings.Join([]string{f("m", m, 1<<60-1, 0, 59), f("h", h, 1<<24-1, 0, 23), f("d", d, allDom, 1, 31),
			f("mo", mo, allMonths, 1, 12), f("w", w, allDays, 0, 6)}, "-"))
	}
	return strings.Join(parts, "-or-")
}

// spell writes a set as runs: "1-5", "mon-fri", "1.15", "mon.wed.fri".
func spell(set uint64, lo, hi int, name func(int) string) string {
	var runs []string
	for v := lo; v <= hi; v++ {
		if set&(1<<uint(v)) == 0 {
			continue
		}
		end := v
		for end+1 <= hi && set&(1<<uint(end+1)) != 0 {
			end++
		}
		switch {
		case end == v:
			runs = append(runs, name(v))
		default:
			runs = append(runs, name(v)+"-"+name(end))
		}
		v = end
	}
	return strings.Join(runs, ".")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
