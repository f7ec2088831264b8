package schedules

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/workflows"
)

// Have is one schedule the namespace holds, as far as a sync needs it.
type Have struct {
	ID string
	// Owned reports that the schedule carries Sluice's memo mark.
	Owned bool
	// Paused and Note are its state, which a sync keeps.
	Paused bool
	Note   string
	// What it does, read back (meaningful when Owned).
	Spec          client.ScheduleSpec
	Workflow      string // workflow type name
	ActionID      string
	TaskQueue     string
	Input         *workflows.DailyIngestInput // nil when the action's input is not a DailyIngestInput
	Summary       string
	Overlap       enumspb.ScheduleOverlapPolicy
	CatchupWindow time.Duration
}

// Op is what a sync does to one schedule.
type Op string

// The ops of a plan.
const (
	Create    Op = "create"
	Update    Op = "update"
	Delete    Op = "delete"
	Unchanged Op = "unchanged"
	// Conflict: a schedule Sluice does not own holds an id Sluice wants;
	// it is left alone and the sync fails.
	Conflict Op = "conflict"
	// Foreign: a schedule Sluice does not own, left alone.
	Foreign Op = "foreign"
	// Unreadable: a schedule that could not be described; a sync then
	// neither writes it nor prunes anything.
	Unreadable Op = "read"
)

// Change is one step of a plan.
type Change struct {
	Op   Op
	ID   string
	Want *Want // create, update, unchanged, conflict
	Have *Have // update, delete, unchanged, conflict, foreign
	// Why lists what differs (update) or what is wrong (conflict).
	Why []string
}

// Plan compares what the registry wants with what the namespace holds:
// create what is missing, update what differs, delete the schedules
// Sluice owns that the registry no longer wants, leave the rest. Foreign
// schedules are never touched. Changes come in the order they are applied:
// creates and updates (by id), unchanged, deletes, conflicts, foreign.
func Plan(wants []Want, haves []Have) []Change {
	byID := map[string]*Have{}
	for i := range haves {
		byID[haves[i].ID] = &haves[i]
	}
	wanted := map[string]bool{}
	var apply, same, del, conflicts, foreign []Change
	for i := range wants {
		w := &wants[i]
		wanted[w.ID] = true
		h := byID[w.ID]
		switch {
		case h == nil:
			apply = append(apply, Change{Op: Create, ID: w.ID, Want: w})
		case !h.Owned:
			conflicts = append(conflicts, Change{Op: Conflict, ID: w.ID, Want: w, Have: h,
				Why: []string{fmt.Sprintf("a schedule with id %s exists and is not Sluice's (no memo %s=%s): rename or delete it, Sluice leaves it alone", w.ID, MemoOwner, OwnerName)}})
		default:
			if why := diff(w, h); len(why) > 0 {
				apply = append(apply, Change{Op: Update, ID: w.ID, Want: w, Have: h, Why: why})
			} else {
				same = append(same, Change{Op: Unchanged, ID: w.ID, Want: w, Have: h})
			}
		}
	}
	for i := range haves {
		h := &haves[i]
		switch {
		case wanted[h.ID]:
		case h.Owned:
			del = append(del, Change{Op: Delete, ID: h.ID, Have: h})
		default:
			foreign = append(foreign, Change{Op: Foreign, ID: h.ID, Have: h})
		}
	}
	var out []Change
	for _, part := range [][]Change{apply, same, del, conflicts, foreign} {
		sort.SliceStable(part, func(i, j int) bool { return part[i].ID < part[j].ID })
		out = append(out, part...)
	}
	return out
}

// diff lists what an owned schedule does differently from what is wanted.
func diff(w *Want, h *Have) []string {
	var why []string
	add := func(format string, args ...any) { why = append(why, fmt.Sprintf(format, args...)) }
	if a, b := canonical(h.Spec.Calendars, h.Spec.Intervals), canonical(w.Calendars, w.Intervals); a != b {
		add("times: %s", w.Cron)
	}
	if h.Spec.TimeZoneName != w.Timezone {
		add("timezone %q → %q", h.Spec.TimeZoneName, w.Timezone)
	}
	if len(h.Spec.Skip) > 0 || !h.Spec.StartAt.IsZero() || !h.Spec.EndAt.IsZero() || h.Spec.Jitter != 0 {
		add("skip, start, end or jitter set by hand: cleared")
	}
	if h.Workflow != workflows.DailyIngestName || h.ActionID != w.ID {
		add("action: workflow %s id %s → %s id %s", h.Workflow, h.ActionID, workflows.DailyIngestName, w.ID)
	}
	if h.TaskQueue != w.TaskQueue {
		add("task queue %q → %q", h.TaskQueue, w.TaskQueue)
	}
	switch in, want := h.Input, w.Input(); {
	case in == nil:
		add("workflow input is not a daily ingest's")
	default:
		if added, removed := setDiff(want.Datasets, in.Datasets); len(added)+len(removed) > 0 {
			add("datasets %s", describeSets(added, removed))
		}
		if !slices.Equal(in.Providers, want.Providers) || in.Date != "" || in.Schedule == nil || *in.Schedule != *want.Schedule {
			add("workflow input: providers %v, schedule %+v → %v, %+v", in.Providers, in.Schedule, want.Providers, *want.Schedule)
		}
	}
	if h.Summary != w.Summary() {
		add("summary")
	}
	if h.Overlap != Overlap {
		add("overlap %s → %s", shortPolicy(h.Overlap), shortPolicy(Overlap))
	}
	if h.CatchupWindow != w.CatchupWindow {
		add("catch-up window %s → %s", h.CatchupWindow, w.CatchupWindow)
	}
	return why
}

// setDiff returns the items of want missing from have, and of have
// missing from want.
func setDiff(want, have []string) (added, removed []string) {
	in := func(s []string, v string) bool { return slices.Contains(s, v) }
	for _, v := range want {
		if !in(have, v) {
			added = append(added, v)
		}
	}
	for _, v := range have {
		if !in(want, v) {
			removed = append(removed, v)
		}
	}
	return added, removed
}

func describeSets(added, removed []string) string {
	list := func(s []string) string {
		if len(s) > 3 {
			return strings.Join(s[:3], ", ") + fmt.Sprintf(" and %d more", len(s)-3)
		}
		return strings.Join(s, ", ")
	}
	var parts []string
	if len(added) > 0 {
		parts = append(parts, fmt.Sprintf("+%d (%s)", len(added), list(added)))
	}
	if len(removed) > 0 {
		parts = append(parts, fmt.Sprintf("-%d (%s)", len(removed), list(removed)))
	}
	return strings.Join(parts, " ")
}

func shortPolicy(p enumspb.ScheduleOverlapPolicy) string {
	return strings.TrimPrefix(p.String(), "SCHEDULE_OVERLAP_POLICY_")
}
