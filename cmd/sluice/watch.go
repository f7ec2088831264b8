package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
	"github.com/sluicehq/sluice/watchsync"
	"github.com/sluicehq/sluice/workflows"
)

func init() {
	register(newWatchCmd)
	register(newChangesCmd)
}

// watchDBFlag is the --watch-db flag of every command that opens the
// watch store.
type watchDBFlag struct{ dsn string }

func (w *watchDBFlag) bind(fs *pflag.FlagSet) {
	stringFlag(fs, &w.dsn, "watch-db", store.EnvDSN, "",
		"the watch store's database: postgres://user@host:5432/db or sqlite:PATH (empty: SQLite at <data-dir>/watch/watch.db)")
}

// open opens the store for a process that writes to it (worker, dev).
func (w *watchDBFlag) open(ctx context.Context, d dataDir) (store.Store, error) {
	return store.Open(ctx, store.Config{DSN: w.dsnIn(d)})
}

// dsnIn is the store's DSN: --watch-db, or SQLite under the data directory.
func (w *watchDBFlag) dsnIn(d dataDir) string {
	if w.dsn != "" {
		return w.dsn
	}
	return "sqlite:" + d.watchDB()
}

// describe names the watch store for a person, without a password.
func (w *watchDBFlag) describe(d dataDir) string {
	if w.dsn == "" {
		return d.watchDB()
	}
	return store.Describe(w.dsn)
}

// openExisting opens the store for a command that only reads it: the
// default SQLite file must exist already (a reading command creates no
// empty store under a mistyped --data-dir).
func (w *watchDBFlag) openExisting(ctx context.Context, d dataDir) (store.Store, error) {
	if w.dsn == "" {
		path := d.watchDB()
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("no watch store at %s: nothing was probed under --data-dir %s yet (sluice dev or a worker creates it), or name the database with --watch-db", path, d.root())
		}
	}
	return store.Open(ctx, store.Config{DSN: w.dsnIn(d)})
}

// readFlags are the flags of the commands that read the watch store.
type readFlags struct {
	db      watchDBFlag
	dataDir dataDir
	tf      temporalFlags
	json    bool
}

func (r *readFlags) bind(fs *pflag.FlagSet) {
	r.db.bind(fs)
	r.dataDir.bind(fs, "the default watch store lives in its watch/ subdirectory")
	r.tf.bind(fs)
	fs.BoolVar(&r.json, "json", false, "print JSON instead of a table")
}

// watches lists the running watch workflows on the configured Temporal,
// within a few seconds, and runs do with the client and the list; the
// client is closed when do returns. do does not run when Temporal cannot
// say.
func (r *readFlags) watches(ctx context.Context, do func(tc client.Client, running map[string]watchsync.Watch)) error {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return r.tf.withClient(dctx, func(tc client.Client) error {
		running, err := watchsync.Running(dctx, tc)
		if err != nil {
			return err
		}
		do(tc, running)
		return nil
	})
}

// selectDatasets returns the ids of the registry's probed datasets that
// match the filters (all when none), refusing unknown names.
func selectDatasets(reg *registry.Registry, datasets, providers []string) ([]string, error) {
	for _, p := range providers {
		if reg.Provider(p) == nil {
			return nil, fmt.Errorf("--provider %s: not in the registry", p)
		}
	}
	for _, d := range datasets {
		if reg.Dataset(d) == nil {
			return nil, fmt.Errorf("--dataset %s: not in the registry (list them with `sluice registry list`)", d)
		}
	}
	var out []string
	for _, d := range reg.Datasets {
		if len(datasets) > 0 && !slices.Contains(datasets, d.ID) {
			continue
		}
		if len(providers) > 0 && !slices.Contains(providers, d.Provider) {
			continue
		}
		if len(datasets) == 0 && d.Probe == nil {
			continue
		}
		out = append(out, d.ID)
	}
	sort.Strings(out)
	return out, nil
}

func newWatchCmd() *cobra.Command {
	var rf readFlags
	var datasets, providers []string
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Print every watched dataset's state: up, degraded, down or unknown",
		Long: `Prints the state table of the datasets the registry probes (or those named
with --dataset / --provider), read from the watch store (--watch-db, or SQLite
under --data-dir): state and since when, the last probe and its outcome, the
last success, the newest period seen and whether it is late, and why a state is
not up. The NEXT column comes from each dataset's watch workflow on the
configured Temporal (--temporal); without it the table is printed all the same.
docs/watch.md has the rules. ` + "`sluice watch sync`" + ` starts and stops the watch workflows.`,
		Args: cobra.NoArgs,
		RunE: withRegistry(func(cmd *cobra.Command, reg *registry.Registry) error {
			ctx := cmd.Context()
			ids, err := selectDatasets(reg, datasets, providers)
			if err != nil {
				return err
			}
			st, err := rf.db.openExisting(ctx, rf.dataDir)
			if err != nil {
				return err
			}
			defer st.Close()
			now := time.Now()
			states, err := st.States(ctx, now, ids...)
			if err != nil {
				return err
			}
			// running stays nil when Temporal cannot say.
			var running map[string]watchsync.Watch
			var statuses map[string]workflows.WatchStatus
			terr := rf.watches(ctx, func(tc client.Client, r map[string]watchsync.Watch) {
				running = r
				statuses, _ = watchsync.Query(ctx, tc, pick(running, ids), 5*time.Second)
			})
			if rf.json {
				return writeWatchJSON(cmd.OutOrStdout(), reg, states, running, statuses)
			}
			writeWatchTable(cmd.OutOrStdout(), reg, states, running, statuses, now)
			if terr != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "watch workflows unknown: %v\n", terr)
			}
			return nil
		}),
	}
	rf.bind(cmd.Flags())
	cmd.Flags().StringSliceVar(&datasets, "dataset", nil, "only this dataset (repeatable)")
	cmd.Flags().StringSliceVar(&providers, "provider", nil, "only this provider's datasets (repeatable)")
	cmd.AddCommand(newWatchSyncCmd())
	return cmd
}

func pick(running map[string]watchsync.Watch, ids []string) map[string]watchsync.Watch {
	out := map[string]watchsync.Watch{}
	for _, id := range ids {
		if w, ok := running[id]; ok {
			out[id] = w
		}
	}
	return out
}

// stamp formats a time for the tables: UTC to the second, "-" when zero.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeWatchTable(out io.Writer, reg *registry.Registry, states []watch.DatasetState, running map[string]watchsync.Watch,
	statuses map[string]workflows.WatchStatus, now time.Time) {
	t := newTable(out, "DATASET\tPROVIDER\tSTATE\tSINCE\tLAST PROBE\tOUTCOME\tLAST SUCCESS\tNEWEST\tLATE\tNEXT\tREASON")
	counts := map[watch.State]int{}
	for _, s := range states {
		counts[s.State]++
		prov := ""
		if d := reg.Dataset(s.Dataset); d != nil {
			prov = d.Provider
		}
		late := "-"
		if s.Late {
			late = "late (due " + s.LateDue + ")"
		}
		next := "not watched"
		if running == nil {
			next = "?"
		} else if _, ok := running[s.Dataset]; ok {
			next = "running"
			if ws, ok := statuses[s.Dataset]; ok {
				next = stamp(ws.Next)
				if !ws.ConfirmAt.IsZero() {
					next = "confirm " + stamp(ws.ConfirmAt)
				}
			}
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Dataset, prov, s.State, stamp(s.Since), stamp(s.LastProbe), dash(string(s.LastOutcome)),
			stamp(s.LastSuccess), dash(s.Newest), late, next, dash(s.Reason))
	}
	t.Flush()
	var parts []string
	for _, st := range watch.States {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	fmt.Fprintf(out, "\n%d datasets: %s; %d watch workflows running (as of %s)\n", len(states), strings.Join(parts, ", "), len(running), stamp(now))
}

func writeWatchJSON(out io.Writer, reg *registry.Registry, states []watch.DatasetState, running map[string]watchsync.Watch, statuses map[string]workflows.WatchStatus) error {
	type row struct {
		watch.DatasetState
		Provider string                 `json:"provider"`
		Watch    *watchsync.Watch       `json:"watch,omitempty"`
		Status   *workflows.WatchStatus `json:"watch_status,omitempty"`
	}
	rows := make([]row, 0, len(states))
	for _, s := range states {
		r := row{DatasetState: s}
		if d := reg.Dataset(s.Dataset); d != nil {
			r.Provider = d.Provider
		}
		if w, ok := running[s.Dataset]; ok {
			r.Watch = &w
		}
		if ws, ok := statuses[s.Dataset]; ok {
			r.Status = &ws
		}
		rows = append(rows, r)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

func newWatchSyncCmd() *cobra.Command {
	var tf temporalFlags
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Start and stop the watch workflows so that every probed dataset has one",
		Long: `Keeps the watch in step with the registry: starts a Watch workflow (id
watch/<dataset>, visible in the Web UI) for every dataset with a probe section
that has none running, stops those of datasets the registry no longer probes,
and moves watches running on another task queue to --task-queue. Intervals need
no update: a watch reads its dataset's interval from the workers' registry at
every probe. Touches nothing but Watch workflows (the daily ingest's Schedules
are ` + "`sluice schedules`" + `'). --dry-run prints the plan only.`,
		Args: cobra.NoArgs,
		RunE: withRegistry(func(cmd *cobra.Command, reg *registry.Registry) error {
			ctx := cmd.Context()
			return tf.withClient(ctx, func(tc client.Client) error {
				running, err := watchsync.Running(ctx, tc)
				if err != nil {
					return err
				}
				steps := watchsync.Plan(reg, running, tf.taskQueue)
				var applyErr error
				if !dryRun {
					applyErr = watchsync.Apply(ctx, tc, reg, tf.taskQueue, steps)
				}
				writeSyncSteps(cmd.OutOrStdout(), steps, dryRun)
				return applyErr
			})
		}),
	}
	tf.bind(cmd.Flags())
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be done, do nothing")
	return cmd
}

func writeSyncSteps(out io.Writer, steps []watchsync.Step, dryRun bool) {
	t := newTable(out, "ACTION\tWORKFLOW\tREASON")
	counts := map[watchsync.Action]int{}
	for _, s := range steps {
		counts[s.Action]++
		if s.Action == watchsync.Keep {
			continue
		}
		fmt.Fprintf(t, "%s\t%s\t%s\n", s.Action, s.WorkflowID, s.Reason)
	}
	t.Flush()
	verb := ""
	if dryRun {
		verb = " (dry run: nothing done)"
	}
	fmt.Fprintf(out, "watches: %d started, %d kept, %d stopped, %d restarted%s\n",
		counts[watchsync.Start], counts[watchsync.Keep], counts[watchsync.Stop], counts[watchsync.Restart], verb)
}

func newChangesCmd() *cobra.Command {
	var rf readFlags
	var since, until string
	var datasets, kinds []string
	var limit int
	cmd := &cobra.Command{
		Use:   "changes [--since WHEN] [--dataset D]...",
		Short: "List Changes: state changes with their evidence, shape changes, late data, revisions",
		Long: `Lists the Changes the watch recorded, oldest first (the newest --limit of
them): state changes with the probes that confirmed them, answers that changed
shape (fields added, removed, retyped), data that is late or caught up, and
revised values (period, old → new). Read from the watch store (--watch-db, or
SQLite under --data-dir).

--since and --until take an RFC 3339 time, a date (YYYY-MM-DD, UTC), or a
duration back from now (90m, 24h, 7d).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			now := time.Now()
			f := store.ChangeFilter{Datasets: datasets, Limit: limit}
			var err error
			if f.Since, err = parseWhen(since, now); err != nil {
				return fmt.Errorf("--since: %w", err)
			}
			if f.Until, err = parseWhen(until, now); err != nil {
				return fmt.Errorf("--until: %w", err)
			}
			for _, k := range kinds {
				if !watch.ChangeKind(k).Valid() {
					var names []string
					for _, x := range watch.ChangeKinds {
						names = append(names, string(x))
					}
					return fmt.Errorf("--kind %s: not a kind of Change (%s)", k, strings.Join(names, ", "))
				}
				f.Kinds = append(f.Kinds, watch.ChangeKind(k))
			}
			if limit < 1 || limit > store.MaxLimit {
				return fmt.Errorf("--limit %d: want 1 to %d", limit, store.MaxLimit)
			}
			reg, err := loadRegistry()
			if err != nil {
				return err
			}
			if _, err := selectDatasets(reg, datasets, nil); err != nil {
				return err
			}
			st, err := rf.db.openExisting(ctx, rf.dataDir)
			if err != nil {
				return err
			}
			defer st.Close()
			changes, err := st.Changes(ctx, f)
			if err != nil {
				return err
			}
			slices.Reverse(changes) // oldest first
			if rf.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(changes)
			}
			writeChanges(cmd.OutOrStdout(), changes)
			// Changes stop coming for a dataset whose watch does not run:
			// say so.
			_ = rf.watches(ctx, func(_ client.Client, running map[string]watchsync.Watch) {
				ids, _ := selectDatasets(reg, datasets, nil)
				var missing []string
				for _, id := range ids {
					if d := reg.Dataset(id); d.Probe != nil {
						if _, ok := running[id]; !ok {
							missing = append(missing, id)
						}
					}
				}
				if len(missing) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "note: %d dataset(s) have no running watch (`sluice watch sync` starts them): %s\n", len(missing), strings.Join(clip(missing, 10), ", "))
				}
			})
			return nil
		},
	}
	rf.bind(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&since, "since", "", "only Changes at or after this time (RFC 3339, YYYY-MM-DD, or a duration back: 24h, 7d)")
	fs.StringVar(&until, "until", "", "only Changes before this time")
	fs.StringSliceVar(&datasets, "dataset", nil, "only this dataset's Changes (repeatable)")
	fs.StringSliceVar(&kinds, "kind", nil, "only Changes of this kind: state, shape, late, caught_up, revision (repeatable)")
	fs.IntVar(&limit, "limit", 200, "at most this many (the newest)")
	return cmd
}

func clip(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
}

// parseWhen reads a time: RFC 3339, a date (UTC midnight) or a duration
// back from now ("90m", "24h", "7d"); "" is the zero time.
func parseWhen(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(days, "%d", &n); err == nil && n >= 0 && fmt.Sprint(n) == days {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time (RFC 3339, YYYY-MM-DD, or a duration back such as 24h or 7d)", s)
}

func writeChanges(out io.Writer, changes []watch.Change) {
	if len(changes) == 0 {
		fmt.Fprintln(out, "no Changes")
		return
	}
	t := newTable(out, "AT\tDATASET\tKIND\tFROM → TO\tSUMMARY")
	for _, c := range changes {
		fromTo := c.From + " → " + c.To
		if c.Kind == watch.ChangeShape {
			fromTo = short(c.From) + " → " + short(c.To)
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\n", stamp(c.At), c.Dataset, c.Kind, fromTo, c.Summary)
		if len(c.Evidence) > 0 {
			var ev []string
			for _, r := range c.Evidence {
				s := stamp(r.At) + " " + string(r.Outcome)
				if r.HTTPStatus != 0 {
					s += fmt.Sprintf(" HTTP %d", r.HTTPStatus)
				}
				if r.Confirmation {
					s += " (confirmation)"
				}
				ev = append(ev, s)
			}
			fmt.Fprintf(t, "\t\t\t\tevidence: %s\n", strings.Join(ev, "; "))
		}
		if c.Shape != nil {
			fmt.Fprintf(t, "\t\t\t\tshape: %s\n", c.Shape)
		}
	}
	t.Flush()
}

// short abbreviates a fingerprint.
func short(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}
