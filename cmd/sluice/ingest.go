package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/internal/kind"
	"github.com/sluicehq/sluice/workflows"
)

func init() { register(newIngestCmd) }

func newIngestCmd() *cobra.Command {
	var tf temporalFlags
	var date string
	var providers, datasets []string
	var detach bool
	cmd := &cobra.Command{
		Use:   "ingest --date YYYY-MM-DD [--provider P]... [--dataset D]...",
		Short: "Start the daily ingest for a logical date and follow it",
		Long: `Starts the DailyIngest workflow (id daily-<date>) on a running Sluice
(sluice dev, or workers against any Temporal) and follows it with a progress
bar, then prints the per-provider summary and every failed dataset. A second
start for a date whose batch is still running follows that batch instead of
starting another. After a batch finished, starting it again re-runs it:
objects are rewritten under the same deterministic keys (unchanged bytes are
skipped), so --dataset re-runs just the ones that failed.

The same from the temporal CLI:
  temporal workflow start --task-queue sluice --type DailyIngest \
    --workflow-id daily-2026-11-29 --input '{"date":"2026-11-29","datasets":["fred-dgs10"]}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := time.Parse(time.DateOnly, date); err != nil {
				return fmt.Errorf("--date %q: want YYYY-MM-DD", date)
			}
			return tf.withClient(cmd.Context(), func(tc client.Client) error {
				in := workflows.DailyIngestInput{Date: date, Providers: providers, Datasets: datasets}
				run, err := startDaily(cmd.Context(), tc, tf.taskQueue, in)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "workflow %s run %s\n", run.GetID(), run.GetRunID())
				if detach {
					return nil
				}
				res, err := follow(cmd.Context(), tc, run, out)
				if err != nil {
					return err
				}
				writeSummary(out, res, nil, nil)
				if res.Failed > 0 {
					return exitError{code: 2}
				}
				return nil
			})
		},
	}
	tf.bind(cmd.Flags())
	cmd.Flags().StringVar(&date, "date", "", "logical date of the data, YYYY-MM-DD (required)")
	cmd.Flags().StringSliceVar(&providers, "provider", nil, "only this provider's datasets (repeatable)")
	cmd.Flags().StringSliceVar(&datasets, "dataset", nil, "only this dataset (repeatable)")
	cmd.Flags().BoolVar(&detach, "detach", false, "start the workflow and return without following it")
	_ = cmd.MarkFlagRequired("date")
	return cmd
}

// startDaily starts a date's batch, or attaches to the one running.
func startDaily(ctx context.Context, tc client.Client, taskQueue string, in workflows.DailyIngestInput) (client.WorkflowRun, error) {
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.DailyWorkflowID(in.Date),
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes:    kind.Of(kind.Daily),
	}, workflows.DailyIngestName, in)
	if err != nil {
		return nil, fmt.Errorf("starting the daily ingest of %s: %w", in.Date, err)
	}
	return run, nil
}

// follow polls the batch's progress until it completes, drawing a bar.
func follow(ctx context.Context, tc client.Client, run client.WorkflowRun, out io.Writer) (workflows.DailyIngestResult, error) {
	done := make(chan error, 1)
	var res workflows.DailyIngestResult
	go func() { done <- run.Get(ctx, &res) }()
	// On a terminal the bar redraws in place; in a log it prints a line
	// every few seconds.
	interval, cr, nl := 300*time.Millisecond, "\r", ""
	if !isTerminal(out) {
		interval, cr, nl = 5*time.Second, "", "\n"
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	start := time.Now()
	last := ""
	for {
		select {
		case err := <-done:
			if err != nil {
				return res, fmt.Errorf("daily ingest %s: %w", run.GetID(), err)
			}
			fmt.Fprintf(out, "%s%s\n", cr, bar(workflows.Progress{Total: len(res.Results), Done: len(res.Results),
				Succeeded: res.Succeeded, NoData: res.NoData, Failed: res.Failed}, time.Since(start)))
			return res, nil
		case <-ctx.Done():
			return res, ctx.Err()
		case <-tick.C:
			v, err := tc.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.ProgressQuery)
			if err != nil {
				continue // the query handler is set after planning; ask again
			}
			var p workflows.Progress
			if v.Get(&p) == nil {
				if line := bar(p, time.Since(start)); line != last {
					fmt.Fprintf(out, "%s%s%s", cr, line, nl)
					last = line
				}
			}
		}
	}
}

func bar(p workflows.Progress, elapsed time.Duration) string {
	const width = 30
	filled := 0
	if p.Total > 0 {
		filled = width * p.Done / p.Total
	}
	return fmt.Sprintf("[%s%s] %d/%d  ok %d  no-data %d  failed %d  %s", strings.Repeat("█", filled), strings.Repeat("·", width-filled),
		p.Done, p.Total, p.Succeeded, p.NoData, p.Failed, elapsed.Round(100*time.Millisecond))
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
