package schedules

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Namespace is what a sync needs of a Temporal namespace's schedules
// (Temporal implements it over a client; tests fake it).
type Namespace interface {
	// IDs lists the ids of every schedule in the namespace. Temporal's
	// list is eventually consistent: a schedule created a moment ago may
	// be missing, which Sync makes up for by describing every id it wants.
	IDs(ctx context.Context) ([]string, error)
	// Describe reads one schedule; nil and no error when there is none.
	Describe(ctx context.Context, id string) (*Have, error)
	// Create creates the schedule w describes, marked as Sluice's.
	Create(ctx context.Context, w Want) error
	// Update makes the schedule w.ID do what w describes, keeping its
	// state (paused, note); it fails if the schedule is not Sluice's.
	Update(ctx context.Context, w Want) error
	// Delete deletes a schedule Sluice owns; it fails if it is not.
	Delete(ctx context.Context, id string) error
}

// Step is one change of a sync and what became of it.
type Step struct {
	Change
	// Err is why the step failed; nil when it was applied (or, in a dry
	// run, would be).
	Err error
	// Skipped is why a delete was not applied (an earlier step failed).
	Skipped string
}

// Report is what a sync did, step by step.
type Report struct {
	DryRun bool
	Steps  []Step
	// ListErr is why the namespace's schedules could not be listed: the
	// sync then applied creates and updates but deleted nothing.
	ListErr error
}

// Err joins the failed steps and conflicts; nil when every step was
// applied.
func (r Report) Err() error {
	var errs []error
	if r.ListErr != nil {
		errs = append(errs, fmt.Errorf("listing schedules: %w", r.ListErr))
	}
	for _, s := range r.Steps {
		switch {
		case s.Err != nil:
			errs = append(errs, fmt.Errorf("%s %s: %w", s.Op, s.ID, s.Err))
		case s.Op == Conflict:
			errs = append(errs, fmt.Errorf("%s: %s", s.ID, strings.Join(s.Why, "; ")))
		}
	}
	return errors.Join(errs...)
}

// Count returns how many steps did (or would do) op and succeeded.
func (r Report) Count(op Op) int {
	n := 0
	for _, s := range r.Steps {
		if s.Op == op && s.Err == nil && s.Skipped == "" {
			n++
		}
	}
	return n
}

// Sync makes the namespace's schedules match wants: it reads every
// schedule there (those it lists and those it wants), plans (Plan), and
// applies creates and updates, then — only if every one succeeded and
// the namespace could be listed — deletes. A dry run applies nothing.
// Foreign schedules are never touched.
func Sync(ctx context.Context, ns Namespace, wants []Want, dryRun bool) Report {
	r := Report{DryRun: dryRun}
	ids, err := ns.IDs(ctx)
	if err != nil {
		r.ListErr = err
	}
	seen := map[string]bool{}
	for _, w := range wants {
		ids = append(ids, w.ID)
	}
	var haves []Have
	var readErrs []Step
	sort.Strings(ids)
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		h, err := ns.Describe(ctx, id)
		if err != nil {
			readErrs = append(readErrs, Step{Change: Change{Op: Unreadable, ID: id}, Err: err})
			continue
		}
		if h != nil {
			haves = append(haves, *h)
		}
	}
	// A schedule that could not be read is neither created nor updated
	// (it may exist), and is no one's to delete.
	unread := map[string]bool{}
	for _, s := range readErrs {
		unread[s.ID] = true
	}
	failed := r.ListErr != nil || len(readErrs) > 0
	var deletes []Step
	for _, c := range Plan(wants, haves) {
		if unread[c.ID] {
			continue
		}
		s := Step{Change: c}
		switch c.Op {
		case Create, Update:
			if !dryRun {
				if c.Op == Create {
					s.Err = ns.Create(ctx, *c.Want)
				} else {
					s.Err = ns.Update(ctx, *c.Want)
				}
				failed = failed || s.Err != nil
			}
		case Conflict:
			failed = true
		case Delete:
			deletes = append(deletes, s)
			continue
		}
		r.Steps = append(r.Steps, s)
	}
	r.Steps = append(r.Steps, readErrs...)
	for _, s := range deletes {
		switch {
		case failed:
			s.Skipped = "not deleted: an earlier step failed, and a failed sync never prunes"
		case !dryRun:
			s.Err = ns.Delete(ctx, s.ID)
		}
		r.Steps = append(r.Steps, s)
	}
	return r
}

// Write prints the report: one line per schedule Sluice wants or owns,
// then the schedules it left alone.
func (r Report) Write(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	verb := func(op Op) string {
		if r.DryRun && op != Unchanged {
			return "would " + string(op)
		}
		return string(op)
	}
	var foreign []string
	for _, s := range r.Steps {
		what := ""
		switch {
		case s.Want != nil:
			what = fmt.Sprintf("%s\t%s (%s)\t%d datasets", s.Want.Provider, s.Want.Cron, s.Want.Timezone, len(s.Want.Datasets))
		case s.Have != nil && s.Have.Input != nil:
			what = fmt.Sprintf("%s\t\t%d datasets", strings.Join(s.Have.Input.Providers, ","), len(s.Have.Input.Datasets))
		default:
			what = "\t\t"
		}
		note := strings.Join(s.Why, "; ")
		switch {
		case s.Op == Foreign:
			foreign = append(foreign, s.ID)
			continue
		case s.Err != nil:
			note = "FAILED: " + s.Err.Error()
		case s.Skipped != "":
			note = s.Skipped
		case s.Have != nil && s.Have.Paused && s.Op != Delete:
			note = strings.TrimPrefix(note+"; paused, kept paused: "+s.Have.Note, "; ")
		}
		op := verb(s.Op)
		if s.Op == Conflict || s.Op == Unreadable {
			op = string(s.Op)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", op, s.ID, what, note)
	}
	_ = tw.Flush()
	if r.ListErr != nil {
		fmt.Fprintf(out, "could not list the namespace's schedules (%v): nothing deleted\n", r.ListErr)
	}
	if len(foreign) > 0 {
		fmt.Fprintf(out, "left alone: %d schedule(s) Sluice does not own: %s\n", len(foreign), strings.Join(foreign, ", "))
	}
	done := "synced"
	if r.DryRun {
		done = "dry run"
	}
	fmt.Fprintf(out, "%s: %d created, %d updated, %d deleted, %d unchanged\n", done,
		r.Count(Create), r.Count(Update), r.Count(Delete), r.Count(Unchanged))
}
