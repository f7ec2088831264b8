package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/internal/kind"
	"github.com/sluicehq/sluice/workflows"
)

func init() { register(newBackfillCmd) }

func newBackfillCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backfill",
		Short: "Start and manage backfills (the Backfill workflow): history in range-planned, quota-aware, resumable chunks",
	}
	cmd.AddCommand(newBackfillStartCmd(), newBackfillListCmd(), newBackfillStatusCmd(),
		newBackfillSignalCmd("pause", workflows.PauseSignal, "Stop a backfill's new provider calls (in-flight chunks finish)"),
		newBackfillSignalCmd("resume", workflows.ResumeSignal, "Let a paused backfill go on"),
		newBackfillCancelCmd())
	return cmd
}

// backfillID is the default workflow id of a backfill: its range and a
// digest of its selection, so the same start twice finds the first.
func backfillID(in workflows.BackfillInput) string {
	sel, _ := json.Marshal([]any{in.Providers, in.Datasets, in.Reprocess})
	sum := sha256.Sum256(sel)
	return fmt.Sprintf("backfill-%s-%s-%s", in.From, in.To, hex.EncodeToString(sum[:4]))
}

func checkDate(flag, v string) error {
	if _, err := time.Parse(time.DateOnly, v); err != nil {
		return fmt.Errorf("--%s %q is not a date (want YYYY-MM-DD)", flag, v)
	}
	return nil
}

func newBackfillStartCmd() *cobra.Command {
	var tf temporalFlags
	var in workflows.BackfillInput
	var id string
	var detach bool
	cmd := &cobra.Command{
		Use:   "start --from D1 --to D2 [--provider P]… [--dataset D]… [--reprocess missing|failed|all] [--detach]",
		Short: "Start a Backfill workflow and follow its progress (chunks, calls, bytes, ETA)",
		Long: `Start a Backfill of --from..--to (both included) over the selected providers
and datasets (none: the whole registry) and follow it with a progress line
until it ends; --detach returns as soon as it has started. The workflow id is
--id, or one made of the range and a digest of the selection, so the same
start twice follows the running backfill instead of starting another.

--reprocess missing (the default) fetches only chunks that have no object and
manifest entry; failed redoes the chunks a manifest records as failed; all
refetches every chunk (unchanged bytes are still not rewritten).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkDate("from", in.From); err != nil {
				return err
			}
			if err := checkDate("to", in.To); err != nil {
				return err
			}
			if in.To < in.From {
				return fmt.Errorf("--to %s is before --from %s", in.To, in.From)
			}
			if _, err := activities.CheckReprocess(in.Reprocess); err != nil {
				return fmt.Errorf("--reprocess %q is not missing, failed or all", in.Reprocess)
			}
			if id == "" {
				id = backfillID(in)
			}
			ctx := cmd.Context()
			return tf.withClient(ctx, func(tc client.Client) error {
				if err := checkBackfillAttributes(ctx, tc, tf.namespace); err != nil {
					return err
				}
				run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
					ID: id, TaskQueue: tf.taskQueue,
					WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
					TypedSearchAttributes:    kind.Of(kind.Backfill),
				}, workflows.BackfillName, in)
				if err != nil {
					return fmt.Errorf("starting backfill %s: %w", id, err)
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "backfill %s run %s\n", run.GetID(), run.GetRunID())
				if detach {
					return nil
				}
				return followBackfill(ctx, tc, run, out)
			})
		},
	}
	tf.bind(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&in.From, "from", "", "first date, YYYY-MM-DD (required)")
	f.StringVar(&in.To, "to", "", "last date, YYYY-MM-DD (required)")
	f.StringArrayVar(&in.Providers, "provider", nil, "backfill only this provider (repeatable)")
	f.StringArrayVar(&in.Datasets, "dataset", nil, "backfill only this dataset (repeatable)")
	f.StringVar(&in.Reprocess, "reprocess", activities.ReprocessMissing, "which chunks to fetch again: missing, failed or all")
	f.StringVar(&id, "id", "", "workflow id (default: made of the range and the selection)")
	f.BoolVar(&detach, "detach", false, "return once the backfill has started")
	_ = cmd.MarkFlagRequired("from")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// checkBackfillAttributes fails, naming the command that adds them, when
// the namespace lacks the search attributes a backfill upserts (its
// workflow task would fail until they exist). A server that does not say
// (no operator permission) is not held against the start.
func checkBackfillAttributes(ctx context.Context, tc client.Client, namespace string) error {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := tc.OperatorService().ListSearchAttributes(lctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil
	}
	var missing []string
	for _, name := range []string{workflows.BackfillStateAttr.GetName(), workflows.BackfillPercentAttr.GetName()} {
		if _, ok := resp.GetCustomAttributes()[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("namespace %s lacks the search attributes %s a backfill keeps current; add them once with: "+
			"temporal operator search-attribute create --namespace %s --name SluiceBackfillState --type Keyword --name SluiceBackfillPercent --type Int",
			namespace, strings.Join(missing, " and "), namespace)
	}
	return nil
}

// followPoll is how often a followed backfill is asked its progress.
const followPoll = 2 * time.Second

// followBackfill prints a progress line whenever the progress changes,
// until the workflow ends, and then its outcome.
func followBackfill(ctx context.Context, tc client.Client, run client.WorkflowRun, out io.Writer) error {
	done := make(chan error, 1)
	var final workflows.BackfillProgress
	go func() { done <- run.GetWithOptions(ctx, &final, client.WorkflowRunGetOptions{}) }()
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	last := ""
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("backfill %s: %w", run.GetID(), err)
			}
			fmt.Fprintln(out, progressLine(final))
			if final.Counts.Failed > 0 {
				fmt.Fprintf(out, "%d chunks failed: `sluice backfill start … --reprocess failed` redoes them\n", final.Counts.Failed)
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			p, err := queryBackfill(ctx, tc, run.GetID())
			if err != nil {
				continue // not started yet, or between runs
			}
			if line := progressLine(p); line != last {
				fmt.Fprintln(out, line)
				last = line
			}
		}
	}
}

func queryBackfill(ctx context.Context, tc client.Client, id string) (workflows.BackfillProgress, error) {
	var p workflows.BackfillProgress
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := tc.QueryWorkflow(qctx, id, "", workflows.ProgressQuery)
	if err != nil {
		return p, fmt.Errorf("asking backfill %s its progress: %w", id, err)
	}
	if err := v.Get(&p); err != nil {
		return p, fmt.Errorf("decoding backfill %s's progress: %w", id, err)
	}
	return p, nil
}

// progressLine is one line of a backfill's progress: a bar, chunks,
// calls, bytes, ETA and state.
func progressLine(p workflows.BackfillProgress) string {
	const width = 24
	filled := int(p.Percent / 100 * width)
	filled = max(0, min(width, filled))
	bar := strings.Repeat("#", filled) + strings.Repeat(".", width-filled)
	eta := "-"
	if !p.ETA.IsZero() {
		eta = p.ETA.Local().Format("2006-01-02 15:04")
	}
	return fmt.Sprintf("[%s] %5.1f%%  chunks %d/%d (%d failed, %d skipped)  calls %d/%d  %s  ETA %s  %s",
		bar, p.Percent, p.Counts.Done, p.Counts.Total, p.Counts.Failed, p.Counts.Skipped,
		p.Counts.Calls, p.Counts.PlannedCalls, humanBytes(p.Counts.Bytes), eta, p.State)
}

func newBackfillListCmd() *cobra.Command {
	var tf temporalFlags
	var all bool
	cmd := &cobra.Command{
		Use:   "list [--all]",
		Short: "List running backfills (--all: finished ones too) with their state and share done",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			return tf.withClient(ctx, func(tc client.Client) error {
				return listBackfills(ctx, tc, tf.namespace, all, cmd.OutOrStdout())
			})
		},
	}
	tf.bind(cmd.Flags())
	cmd.Flags().BoolVar(&all, "all", false, "list finished backfills too")
	return cmd
}

// listBackfills writes the table of the namespace's backfills: the
// running ones, or all.
func listBackfills(ctx context.Context, tc client.Client, namespace string, all bool, out io.Writer) error {
	q := fmt.Sprintf("WorkflowType = '%s'", workflows.BackfillName)
	if !all {
		q += " AND ExecutionStatus = 'Running'"
	}
	t := newTable(out, "ID\tSTATUS\tSTARTED\tSTATE\tPERCENT")
	var token []byte
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, Query: q, PageSize: 100, NextPageToken: token})
		if err != nil {
			return fmt.Errorf("listing backfills: %w", err)
		}
		for _, e := range resp.Executions {
			state, pct := "", ""
			if f := e.GetSearchAttributes().GetIndexedFields(); f != nil {
				if p := f[workflows.BackfillStateAttr.GetName()]; p != nil {
					_ = json.Unmarshal(p.GetData(), &state)
				}
				if p := f[workflows.BackfillPercentAttr.GetName()]; p != nil {
					var n int64
					if json.Unmarshal(p.GetData(), &n) == nil {
						pct = fmt.Sprintf("%d%%", n)
					}
				}
			}
			fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\n", e.GetExecution().GetWorkflowId(),
				strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_")),
				e.GetStartTime().AsTime().Format(time.RFC3339), state, pct)
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	return t.Flush()
}

func newBackfillStatusCmd() *cobra.Command {
	var tf temporalFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status ID [--json]",
		Short: "Show a backfill's progress: chunks, calls, bytes, per provider, ETA, state",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var p workflows.BackfillProgress
			err := tf.withClient(ctx, func(tc client.Client) error {
				var err error
				if p, err = queryBackfill(ctx, tc, args[0]); err != nil {
					// A finished backfill answers with its result.
					if perr := tc.GetWorkflow(ctx, args[0], "").Get(ctx, &p); perr != nil {
						return errors.Join(err, perr)
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(p)
			}
			fmt.Fprintf(out, "backfill %s: %s..%s, reprocess %s, started %s\n", args[0], p.From, p.To, p.Reprocess, p.Started.Format(time.RFC3339))
			fmt.Fprintln(out, progressLine(p))
			if p.Message != "" {
				fmt.Fprintln(out, p.Message)
			}
			t := newTable(out, "PROVIDER\tSTATE\tCHUNKS\tFAILED\tSKIPPED\tCALLS\tBYTES")
			for _, pp := range p.Providers {
				fmt.Fprintf(t, "%s\t%s\t%d/%d\t%d\t%d\t%d/%d\t%s\n", pp.Provider, pp.State, pp.Counts.Done, pp.Counts.Total,
					pp.Counts.Failed, pp.Counts.Skipped, pp.Counts.Calls, pp.Counts.PlannedCalls, humanBytes(pp.Counts.Bytes))
			}
			return t.Flush()
		},
	}
	tf.bind(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the progress query's answer as JSON")
	return cmd
}

func newBackfillSignalCmd(use, signal, short string) *cobra.Command {
	return newActCmd(use+" ID", short, func(ctx context.Context, tc client.Client, id string) (string, error) {
		if err := tc.SignalWorkflow(ctx, id, "", signal, nil); err != nil {
			return "", fmt.Errorf("signalling %s to backfill %s: %w", signal, id, err)
		}
		return fmt.Sprintf("%s sent to backfill %s", signal, id), nil
	})
}

func newBackfillCancelCmd() *cobra.Command {
	return newActCmd("cancel ID", "Cancel a backfill: in-flight chunks abort (no partial object); what landed stays recorded",
		func(ctx context.Context, tc client.Client, id string) (string, error) {
			if err := tc.CancelWorkflow(ctx, id, ""); err != nil {
				return "", fmt.Errorf("cancelling backfill %s: %w", id, err)
			}
			return "cancellation requested for backfill " + id, nil
		})
}
