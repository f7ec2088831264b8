package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/internal/kind"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/workflows"
)

func init() { register(newLakeCmd) }

func newLakeCmd() *cobra.Command {
	var lf lakeFlags
	lake := &cobra.Command{
		Use:   "lake",
		Short: "Inspect the bronze lake: list, print and verify objects",
		Long: `Inspect the bronze lake without other tools. The lake is S3 when --s3-bucket
(SLUICE_S3_BUCKET) is set, else the local directory <data-dir>/lake.`,
	}
	lf.bind(lake.PersistentFlags())
	// The lake commands only read: they never create a lake, so a
	// mistyped --data-dir is an error, not an empty lake that verifies.
	open := lf.openExisting
	lake.AddCommand(newLakeLsCmd(open), newLakeCatCmd(open), newLakeVerifyCmd(open))
	return lake
}

type openLake func(context.Context) (sink.Sink, error)

// with opens the lake, runs do with it and closes it when do returns.
func (open openLake) with(ctx context.Context, do func(sink.Sink) error) error {
	lake, err := open(ctx)
	if err != nil {
		return err
	}
	defer lake.Close()
	return do(lake)
}

func newLakeLsCmd(open openLake) *cobra.Command {
	return &cobra.Command{
		Use:   "ls [PREFIX]",
		Short: "List objects with their sizes, SHA-256 and fetch time",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prefix := ""
			if len(args) == 1 {
				prefix = args[0]
			}
			return open.with(cmd.Context(), func(lake sink.Sink) error {
				return listLake(cmd.Context(), lake, prefix, cmd.OutOrStdout())
			})
		},
	}
}

// listLake writes the table of the objects under prefix and a total.
func listLake(ctx context.Context, lake sink.Sink, prefix string, out io.Writer) error {
	tw := newTable(out, "KEY\tRAW\tCOMPRESSED\tPAGES\tSHA256\tFETCHED\tWINDOW")
	var n, raw, compressed int64
	err := lake.List(ctx, prefix, func(o sink.Object) error {
		n++
		raw += o.RawSize
		compressed += o.CompressedSize
		sum, fetched, pages, window := "-", "-", "-", "-"
		if o.HasMeta() {
			sum = o.RawSHA256[:12]
			fetched = o.FetchedAt.UTC().Format(time.RFC3339)
			pages = strconv.Itoa(o.Pages)
		}
		if !o.Window.IsZero() {
			window = o.Window.String()
		}
		_, err := fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", o.Key, o.RawSize, o.CompressedSize, pages, sum, fetched, window)
		return err
	})
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	ratio := ""
	if compressed > 0 && raw > 0 {
		ratio = fmt.Sprintf(" (%.1f×)", float64(raw)/float64(compressed))
	}
	_, err = fmt.Fprintf(out, "%d objects, %s raw, %s compressed%s\n",
		n, humanBytes(raw), humanBytes(compressed), ratio)
	return err
}

func newLakeCatCmd(open openLake) *cobra.Command {
	var page int
	var meta bool
	cmd := &cobra.Command{
		Use:   "cat KEY [--page N | --meta]",
		Short: "Decompress an object (or one of its pages) to standard output",
		Long: `Decompress an object to standard output: the raw bytes of every page the
provider sent, back to back. --page N prints page N alone (1-based; see the
PAGES column of lake ls). When the object records a SHA-256 (of the whole, or
of the page), the bytes are checked against it after they are written, and a
mismatch is an error. --meta prints the object's recorded metadata instead:
sizes, pages, SHA-256, content type, source URL, fetch time, the window of
dates its request asked for, and the Sluice version that wrote it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return open.with(cmd.Context(), func(lake sink.Sink) error {
				if meta {
					o, err := lake.Stat(cmd.Context(), args[0])
					if err != nil {
						return err
					}
					writeObjectMeta(cmd.OutOrStdout(), o)
					return nil
				}
				var rc io.ReadCloser
				var want string
				var err error
				if cmd.Flags().Changed("page") {
					var p sink.Page
					if rc, p, err = lake.OpenPage(cmd.Context(), args[0], page); err != nil {
						return err
					}
					want = p.RawSHA256
				} else {
					var obj sink.Object
					if rc, obj, err = lake.Open(cmd.Context(), args[0]); err != nil {
						return err
					}
					want = obj.RawSHA256
				}
				defer rc.Close()
				h := sha256.New()
				if _, err := io.Copy(io.MultiWriter(cmd.OutOrStdout(), h), rc); err != nil {
					return fmt.Errorf("reading %s: %w", args[0], err)
				}
				if got := hex.EncodeToString(h.Sum(nil)); want != "" && got != want {
					return fmt.Errorf("%s: sha256 %s does not match the recorded %s", args[0], got, want)
				}
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&page, "page", 0, "print only this page (1-based)")
	cmd.Flags().BoolVar(&meta, "meta", false, "print the object's recorded metadata instead of its bytes")
	cmd.MarkFlagsMutuallyExclusive("page", "meta")
	return cmd
}

// writeObjectMeta prints an object's recorded metadata, one field a line.
func writeObjectMeta(out io.Writer, o sink.Object) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	line := func(k, v string) {
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\n", k, v)
	}
	line("key", o.Key)
	if !o.HasMeta() {
		line("metadata", "none (not written by Sluice)")
		_ = tw.Flush()
		return
	}
	line("raw", fmt.Sprintf("%d bytes", o.RawSize))
	line("compressed", fmt.Sprintf("%d bytes", o.CompressedSize))
	line("pages", strconv.Itoa(o.Pages))
	line("sha256", o.RawSHA256)
	line("content type", o.ContentType)
	line("source url", o.SourceURL)
	line("fetched", o.FetchedAt.UTC().Format(time.RFC3339))
	line("window", o.Window.String())
	line("written by", o.Writer)
	_ = tw.Flush()
}

func newLakeVerifyCmd(open openLake) *cobra.Command {
	var tf temporalFlags
	var repair bool
	cmd := &cobra.Command{
		Use:   "verify [PREFIX] [--repair]",
		Short: "Check that every object decompresses to its recorded SHA-256 and size; --repair refetches the damaged",
		Long: `Check that every object (under PREFIX) decompresses and matches the sizes and
SHA-256s recorded with it, page by page and whole. Prints each failure and a
summary; exits 1 on any mismatch.

--repair fetches every damaged object again through the normal path: it reads
the dataset and logical dates back from the key (a range key gives the range)
and starts one Refetch workflow for them on the configured Temporal (--temporal,
--namespace, --task-queue), whose Ingest activities wait for permits like any
other call and rewrite the damaged objects. It follows the workflow, verifies
the refetched keys again and prints REPAIRED or STILL DAMAGED for each. A key
it cannot map back to a dataset and dates (not a key Sluice builds) is listed as
CANNOT REPAIR and left as it is; a key whose dataset the workers' registry does
not know fails in the workflow and is reported the same way. Exits 1 unless
every damaged object was repaired.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			return open.with(ctx, func(lake sink.Sink) error {
				prefix := ""
				if len(args) == 1 {
					prefix = args[0]
				}
				var n int
				var damaged []string
				err := lake.List(ctx, prefix, func(o sink.Object) error {
					n++
					problem, err := verifyObject(ctx, lake, o)
					if err != nil {
						return err
					}
					if problem != "" {
						damaged = append(damaged, o.Key)
						_, err = fmt.Fprintf(out, "FAIL %s: %s\n", o.Key, problem)
					}
					return err
				})
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "verified %d objects, %d mismatches\n", n, len(damaged))
				if len(damaged) == 0 {
					return nil
				}
				if repair {
					if left, err := repairObjects(ctx, lake, tf, damaged, out); err != nil || left > 0 {
						if err != nil {
							return err
						}
						return exitError{code: 1}
					}
					return nil
				}
				return exitError{code: 1}
			})
		},
	}
	tf.bind(cmd.Flags())
	cmd.Flags().BoolVar(&repair, "repair", false, "refetch every damaged object through a Refetch workflow on the configured Temporal")
	return cmd
}

// verifyObject checks one object against its recorded metadata. It
// returns a description of the mismatch ("" when it matches), or an
// error when the lake itself cannot be read.
func verifyObject(ctx context.Context, lake sink.Sink, o sink.Object) (string, error) {
	err := lake.Verify(ctx, o.Key)
	var de *sink.DamageError
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &de):
		return de.Problem, nil
	case errors.Is(err, sink.ErrNotFound):
		return "removed while verifying", nil
	case ctx.Err() != nil:
		return "", ctx.Err()
	}
	return "", err
}

// repairObjects refetches damaged keys with a Refetch workflow and
// verifies them again; it returns how many are still damaged (or could
// not be mapped back to an ingest).
func repairObjects(ctx context.Context, lake sink.Sink, tf temporalFlags, keys []string, out io.Writer) (int, error) {
	left := 0
	var items []activities.IngestInput
	var mapped []string
	for _, k := range keys {
		spec, err := sink.ParseKey(k)
		if err != nil {
			left++
			fmt.Fprintf(out, "CANNOT REPAIR %s: %v\n", k, err)
			continue
		}
		// A day key is that date's daily run (its look-back window); a
		// range key the range.
		in := activities.IngestInput{Dataset: spec.Dataset, From: spec.From.Format(time.DateOnly), LookBack: spec.To.IsZero()}
		if !spec.To.IsZero() {
			in.To = spec.To.Format(time.DateOnly)
		}
		items, mapped = append(items, in), append(mapped, k)
	}
	if len(items) == 0 {
		return left, nil
	}
	tc, err := tf.dialQuiet(ctx)
	if err != nil {
		return left, fmt.Errorf("repairing %d objects: %w", len(items), err)
	}
	defer tc.Close()
	for start := 0; start < len(items); start += workflows.MaxRefetchItems {
		end := min(start+workflows.MaxRefetchItems, len(items))
		batch, batchKeys := items[start:end], mapped[start:end]
		id := repairWorkflowID(batchKeys)
		run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: id, TaskQueue: tf.taskQueue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			TypedSearchAttributes:    kind.Of(kind.Refetch),
		}, workflows.RefetchName, workflows.RefetchInput{Items: batch})
		if err != nil {
			return left, fmt.Errorf("starting the refetch of %d objects: %w", len(batch), err)
		}
		fmt.Fprintf(out, "refetching %d objects: workflow %s run %s\n", len(batch), run.GetID(), run.GetRunID())
		var res workflows.RefetchResult
		if err := run.Get(ctx, &res); err != nil {
			return left, fmt.Errorf("refetch workflow %s: %w", run.GetID(), err)
		}
		for i, k := range batchKeys {
			var r workflows.DatasetResult
			if i < len(res.Results) {
				r = res.Results[i]
			}
			switch {
			case r.Status == workflows.StatusFailed:
				left++
				fmt.Fprintf(out, "STILL DAMAGED %s: refetch failed (%s): %s\n", k, r.ErrorType, r.Error)
			case r.Status == workflows.StatusNoData:
				left++
				fmt.Fprintf(out, "STILL DAMAGED %s: the provider now answers no data for it\n", k)
			default:
				problem, err := verifyObject(ctx, lake, sink.Object{Key: k})
				if err != nil {
					return left, err
				}
				if problem != "" {
					left++
					fmt.Fprintf(out, "STILL DAMAGED %s: %s (the refetch wrote %s)\n", k, problem, r.Key)
					continue
				}
				fmt.Fprintf(out, "REPAIRED %s (%d pages)\n", k, r.Pages)
			}
		}
	}
	fmt.Fprintf(out, "repaired %d of %d damaged objects\n", len(keys)-left, len(keys))
	return left, nil
}

// repairWorkflowID names the refetch of a set of keys: asking again for
// the same keys while it runs follows that run.
func repairWorkflowID(keys []string) string {
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
	}
	return "lake-repair-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// humanBytes renders n with a binary unit, e.g. "1.8 KiB".
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
