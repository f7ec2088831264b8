package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/schedules"
)

func init() { register(newSchedulesCmd) }

func newSchedulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "Keep the namespace's Temporal Schedules in step with the registry, and run them",
		Long: `Each provider's datasets that share an ingest schedule (ingest.schedule, a
cron line in the provider's timezone) are one Temporal Schedule, id
sluice-<provider>-<when> (sluice-ecos-0900-daily), that starts DailyIngest for
them. A run's logical date is the day before its nominal time in the
provider's calendar: the 09:00 KST run of 2026-12-01 ingests 2026-11-30, under
the keys 'sluice ingest --date 2026-11-30' writes, and so does a catch-up or a
'temporal schedule backfill' of that time. Schedules Sluice creates carry the
memo sluice-managed-by=sluice; no other schedule is ever touched.`,
	}
	cmd.AddCommand(newSchedulesSyncCmd(), newSchedulesListCmd(), newSchedulesPauseCmd(), newSchedulesUnpauseCmd(), newSchedulesTriggerCmd())
	return cmd
}

// catchupFlag binds --catchup-window.
func catchupFlag(cmd *cobra.Command, p *time.Duration) {
	durationFlag(cmd.Flags(), p, "catchup-window", "SLUICE_SCHEDULE_CATCHUP_WINDOW", schedules.DefaultCatchupWindow,
		"how late a run missed while Temporal was down is still taken when it comes back")
}

// syncSchedules plans and applies the registry's schedules, printing the
// report.
func syncSchedules(ctx context.Context, tc client.Client, reg *registry.Registry, opts schedules.Options, dryRun bool, out io.Writer) (schedules.Report, error) {
	wants, err := schedules.Wanted(reg, opts)
	if err != nil {
		return schedules.Report{}, fmt.Errorf("planning schedules: %w", err)
	}
	r := schedules.Sync(ctx, schedules.Temporal(tc), wants, dryRun)
	r.Write(out)
	if err := r.Err(); err != nil {
		return r, fmt.Errorf("syncing schedules: %w", err)
	}
	return r, nil
}

func newSchedulesSyncCmd() *cobra.Command {
	var tf temporalFlags
	var dryRun bool
	var catchup time.Duration
	cmd := &cobra.Command{
		Use:   "sync [--dry-run]",
		Short: "Make the namespace's schedules match the registry",
		Long: `Creates the schedules the registry asks for, updates those that differ
(keeping a paused schedule paused, with its note), deletes the ones Sluice
owns that the registry no longer asks for, and prints each with what it did;
a second sync changes nothing. Deletes come last, and only when every other
step succeeded: a failed sync never prunes. Schedules without Sluice's memo
are left alone. --dry-run prints the plan and changes nothing.

Every schedule overlaps BUFFER_ALL (a group never runs twice at once; runs
that fire while one is still going, or waiting for a worker, run in turn
after it) and catches up --catchup-window after a Temporal outage.

Run it after every registry change, with the registry the workers run.`,
		Args: cobra.NoArgs,
		RunE: withRegistry(func(cmd *cobra.Command, reg *registry.Registry) error {
			return tf.withClient(cmd.Context(), func(tc client.Client) error {
				_, err := syncSchedules(cmd.Context(), tc, reg, schedules.Options{TaskQueue: tf.taskQueue, CatchupWindow: catchup}, dryRun, cmd.OutOrStdout())
				return err
			})
		}),
	}
	tf.bind(cmd.Flags())
	catchupFlag(cmd, &catchup)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what a sync would create, update and delete, and change nothing")
	return cmd
}

func newSchedulesListCmd() *cobra.Command {
	var tf temporalFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List Sluice's schedules: datasets, state, next and last runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return tf.withClient(cmd.Context(), func(tc client.Client) error {
				entries, err := schedules.List(cmd.Context(), tc)
				if err != nil {
					return err
				}
				writeScheduleList(cmd.OutOrStdout(), entries)
				return nil
			})
		},
	}
	tf.bind(cmd.Flags())
	return cmd
}

func writeScheduleList(out io.Writer, entries []schedules.Entry) {
	if len(entries) == 0 {
		fmt.Fprintln(out, "no schedules of Sluice's in this namespace: run sluice schedules sync")
		return
	}
	tw := newTable(out, "SCHEDULE\tWHEN\tTIMEZONE\tDATASETS\tSTATE\tNEXT\tLAST RUN")
	for _, e := range entries {
		loc, err := time.LoadLocation(e.Spec.TimeZoneName)
		if err != nil {
			loc = time.UTC
		}
		when, datasets := "", 0
		if len(e.Spec.Calendars) > 0 {
			when = e.Spec.Calendars[0].Comment
		}
		if e.Input != nil {
			datasets = len(e.Input.Datasets)
		}
		state := "active"
		if e.Paused {
			state = "paused"
			if e.Note != "" {
				state += ": " + e.Note
			}
		}
		next, last := "-", "-"
		if len(e.Next) > 0 {
			next = e.Next[0].In(loc).Format("2006-01-02 15:04 MST")
		}
		if n := len(e.Recent); n > 0 {
			last = e.Recent[n-1].Nominal.In(loc).Format("2006-01-02 15:04 MST") + " " + e.Recent[n-1].WorkflowID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", e.ID, when, e.Spec.TimeZoneName, datasets, state, next, last)
	}
	_ = tw.Flush()
}

func newSchedulesPauseCmd() *cobra.Command {
	var note string
	cmd := newActCmd("pause SCHEDULE --note WHY", "Pause one of Sluice's schedules, saying why",
		func(ctx context.Context, tc client.Client, id string) (string, error) {
			if err := schedules.Pause(ctx, tc, id, note); err != nil {
				return "", err
			}
			return fmt.Sprintf("paused %s: %s", id, note), nil
		})
	cmd.Long = `Pauses the schedule: no run starts until it is unpaused, and the runs it
would have started meanwhile are not taken later. The note shows in the Web
UI and in sluice schedules list; a sync keeps the schedule paused.`
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if strings.TrimSpace(note) == "" {
			return fmt.Errorf("--note: say why the schedule is paused")
		}
		return nil
	}
	cmd.Flags().StringVar(&note, "note", "", "why the schedule is paused (required)")
	return cmd
}

func newSchedulesUnpauseCmd() *cobra.Command {
	var note string
	cmd := newActCmd("unpause SCHEDULE [--note TEXT]", "Resume one of Sluice's schedules",
		func(ctx context.Context, tc client.Client, id string) (string, error) {
			if err := schedules.Unpause(ctx, tc, id, note); err != nil {
				return "", err
			}
			return "unpaused " + id, nil
		})
	cmd.Flags().StringVar(&note, "note", "unpaused with sluice schedules unpause", "note kept with the schedule")
	return cmd
}

func newSchedulesTriggerCmd() *cobra.Command {
	cmd := newActCmd("trigger SCHEDULE", "Run one of Sluice's schedules now",
		func(ctx context.Context, tc client.Client, id string) (string, error) {
			if err := schedules.Trigger(ctx, tc, id); err != nil {
				return "", err
			}
			return "triggered " + id, nil
		})
	cmd.Long = `Starts the schedule's action now, as if its time had come: the run's nominal
time is now, so it ingests yesterday in the provider's calendar. It waits for a
run of the schedule still going (BUFFER_ALL). For another date, use sluice
ingest --date, or temporal schedule backfill.`
	return cmd
}
