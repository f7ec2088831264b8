package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/sink"
)

func init() { register(newLakeCmd) }

func newLakeCmd() *cobra.Command {
	var cfg sink.Config
	lake := &cobra.Command{
		Use:   "lake",
		Short: "Inspect the bronze lake: list, print and verify objects",
		Long: `Inspect the bronze lake without other tools. The lake is S3 when --s3-bucket
(SLUICE_S3_BUCKET) is set, else the local directory <data-dir>/lake.`,
	}
	cfg.BindFlags(lake.PersistentFlags())
	// The lake commands only read: they never create a lake, so a
	// mistyped --data-dir is an error, not an empty lake that verifies.
	open := func(ctx context.Context) (sink.Sink, error) { return cfg.OpenExisting(ctx) }
	lake.AddCommand(newLakeLsCmd(open), newLakeCatCmd(open), newLakeVerifyCmd(open))
	return lake
}

type openLake func(context.Context) (sink.Sink, error)

func newLakeLsCmd(open openLake) *cobra.Command {
	return &cobra.Command{
		Use:   "ls [PREFIX]",
		Short: "List objects with their sizes, SHA-256 and fetch time",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			lake, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer lake.Close()
			prefix := ""
			if len(args) == 1 {
				prefix = args[0]
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tRAW\tCOMPRESSED\tSHA256\tFETCHED")
			var n, raw, compressed int64
			err = lake.List(cmd.Context(), prefix, func(o sink.Object) error {
				n++
				raw += o.RawSize
				compressed += o.CompressedSize
				sum, fetched := "-", "-"
				if o.HasMeta() {
					sum = o.RawSHA256[:12]
					fetched = o.FetchedAt.UTC().Format(time.RFC3339)
				}
				_, err := fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", o.Key, o.RawSize, o.CompressedSize, sum, fetched)
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
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%d objects, %s raw, %s compressed%s\n",
				n, humanBytes(raw), humanBytes(compressed), ratio)
			return err
		},
	}
}

func newLakeCatCmd(open openLake) *cobra.Command {
	return &cobra.Command{
		Use:   "cat KEY",
		Short: "Decompress an object to standard output",
		Long: `Decompress an object to standard output. When the object records a SHA-256,
the bytes are checked against it after they are written, and a mismatch is
an error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			lake, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer lake.Close()
			rc, obj, err := lake.Open(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer rc.Close()
			h := sha256.New()
			if _, err := io.Copy(io.MultiWriter(cmd.OutOrStdout(), h), rc); err != nil {
				return fmt.Errorf("reading %s: %w", args[0], err)
			}
			if got := hex.EncodeToString(h.Sum(nil)); obj.HasMeta() && got != obj.RawSHA256 {
				return fmt.Errorf("%s: sha256 %s does not match the recorded %s", args[0], got, obj.RawSHA256)
			}
			return nil
		},
	}
}

func newLakeVerifyCmd(open openLake) *cobra.Command {
	return &cobra.Command{
		Use:   "verify [PREFIX]",
		Short: "Check that every object decompresses to its recorded SHA-256 and size",
		Long: `Check that every object (under PREFIX) decompresses and matches the SHA-256
and raw size recorded with it. Prints each failure and a summary; exits 1 on
any mismatch.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			lake, err := open(ctx)
			if err != nil {
				return err
			}
			defer lake.Close()
			prefix := ""
			if len(args) == 1 {
				prefix = args[0]
			}
			var n, bad int
			err = lake.List(ctx, prefix, func(o sink.Object) error {
				n++
				problem, err := verifyObject(ctx, lake, o)
				if err != nil {
					return err
				}
				if problem != "" {
					bad++
					_, err = fmt.Fprintf(out, "FAIL %s: %s\n", o.Key, problem)
				}
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "verified %d objects, %d mismatches\n", n, bad)
			if bad > 0 {
				return exitError{code: 1}
			}
			return nil
		},
	}
}

// verifyObject decompresses one object and compares it with its recorded
// metadata. It returns a description of the mismatch ("" when it
// matches), or an error when the lake itself cannot be read.
func verifyObject(ctx context.Context, lake sink.Sink, o sink.Object) (string, error) {
	if !o.HasMeta() {
		return "no recorded sha256 (not written by Sluice, or its metadata is damaged)", nil
	}
	rc, _, err := lake.Open(ctx, o.Key)
	if errors.Is(err, sink.ErrNotFound) {
		return "removed while verifying", nil
	}
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h := sha256.New()
	size, err := io.Copy(h, rc)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return fmt.Sprintf("does not decompress: %v", err), nil
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != o.RawSHA256 {
		return fmt.Sprintf("sha256 %s, recorded %s", got, o.RawSHA256), nil
	}
	if size != o.RawSize {
		return fmt.Sprintf("%d raw bytes, recorded %d", size, o.RawSize), nil
	}
	return "", nil
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
