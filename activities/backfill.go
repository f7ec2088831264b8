package activities

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/sluicehq/sluice/manifest"
	"github.com/sluicehq/sluice/sink"
)

// Reprocess modes of a backfill: which chunks it fetches again.
const (
	// ReprocessMissing (the default) fetches every chunk that has no
	// object and manifest entry yet (failed and never tried); chunks
	// already landed, or recorded as no_data, make no provider call.
	ReprocessMissing = "missing"
	// ReprocessFailed fetches only the chunks a manifest records as failed.
	ReprocessFailed = "failed"
	// ReprocessAll fetches every chunk (the sink still skips unchanged
	// bytes).
	ReprocessAll = "all"
)

// CheckReprocess returns the reprocess mode, "" meaning ReprocessMissing,
// or a non-retryable bad_input error naming the value.
func CheckReprocess(mode string) (string, error) {
	switch mode {
	case "":
		return ReprocessMissing, nil
	case ReprocessMissing, ReprocessFailed, ReprocessAll:
		return mode, nil
	}
	return "", temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("backfill input: reprocess %q is not missing, failed or all", mode), ErrTypeBadInput, nil)
}

// BackfillChunk is one range of one dataset a backfill fetches with one
// Ingest.
type BackfillChunk struct {
	From  string `json:"from"` // YYYY-MM-DD
	To    string `json:"to"`
	Calls int    `json:"calls"` // planned provider calls (pages)
}

// CheckChunksInput asks which of a dataset's chunks a backfill must fetch.
type CheckChunksInput struct {
	Backfill  string          `json:"backfill"`
	Dataset   string          `json:"dataset"`
	Reprocess string          `json:"reprocess"`
	Chunks    []BackfillChunk `json:"chunks"`
}

// CheckChunksResult splits the chunks: Fetch lists the indexes (into the
// input's Chunks) to ingest; Done holds the manifest entry of every other
// chunk, in input order of the chunks it names.
type CheckChunksResult struct {
	Fetch []int            `json:"fetch"`
	Done  []manifest.Entry `json:"done,omitempty"`
	// DoneIndex is the index (into the input's Chunks) of each Done entry.
	DoneIndex []int `json:"done_index,omitempty"`
	// Recovered counts the chunks whose object was in the lake without a
	// manifest entry (landed by a worker that died before recording it):
	// their entries are made from the objects' metadata.
	Recovered int `json:"recovered,omitempty"`
}

// CheckChunks reads the dataset's objects and manifests and decides, per
// reprocess mode, which chunks need a provider call. It makes none.
func (a *Activities) CheckChunks(ctx context.Context, in CheckChunksInput) (CheckChunksResult, error) {
	var res CheckChunksResult
	ds := a.cfg.Registry.Dataset(in.Dataset)
	if ds == nil {
		return res, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("dataset %q is not in the registry", in.Dataset), ErrTypeUnknownDataset, nil)
	}
	mode, err := CheckReprocess(in.Reprocess)
	if err != nil {
		return res, err
	}
	if mode == ReprocessAll {
		for i := range in.Chunks {
			res.Fetch = append(res.Fetch, i)
		}
		return res, nil
	}
	// The objects of the dataset's range keys, by range.
	objects := map[[2]string]sink.Object{}
	prefix := "provider=" + ds.Provider + "/job=" + ds.ID + "/"
	if err := a.cfg.Sink.List(ctx, prefix, func(o sink.Object) error {
		spec, err := sink.ParseKey(o.Key)
		if err != nil || spec.Dataset != ds.ID || spec.To.IsZero() {
			return nil
		}
		objects[[2]string{spec.From.Format(time.DateOnly), spec.To.Format(time.DateOnly)}] = o
		return nil
	}); err != nil {
		return res, fmt.Errorf("listing the objects of %s: %w", ds.ID, err)
	}
	ms, err := manifest.Dataset(ctx, a.cfg.Sink, ds.ID)
	if err != nil {
		return res, err
	}
	latest := manifest.Latest(ms)
	now := time.Now().UTC()
	for i, c := range in.Chunks {
		k := [2]string{c.From, c.To}
		e, recorded := latest[k]
		o, landed := objects[k]
		switch {
		case mode == ReprocessFailed && (!recorded || e.Status != manifest.StatusFailed):
			// Only failed chunks are redone; others keep their record.
			if recorded {
				e.Skipped = true
				res.DoneIndex = append(res.DoneIndex, i)
				res.Done = append(res.Done, e)
			} else if landed {
				res.DoneIndex = append(res.DoneIndex, i)
				res.Done = append(res.Done, fromObject(c, o, now))
				res.Recovered++
			} else {
				res.DoneIndex = append(res.DoneIndex, i)
				res.Done = append(res.Done, manifest.Entry{From: c.From, To: c.To, Status: manifest.StatusFailed, Error: "never fetched (reprocess failed redoes only failed chunks)", Skipped: true, Updated: now})
			}
		case mode == ReprocessMissing && landed && recorded && e.Status == manifest.StatusOK && e.Key == o.Key:
			e.Skipped = true
			res.DoneIndex = append(res.DoneIndex, i)
			res.Done = append(res.Done, e)
		case mode == ReprocessMissing && landed:
			// The object is the truth: it landed, its entry was lost.
			res.DoneIndex = append(res.DoneIndex, i)
			res.Done = append(res.Done, fromObject(c, o, now))
			res.Recovered++
		case mode == ReprocessMissing && recorded && e.Status == manifest.StatusNoData:
			e.Skipped = true
			res.DoneIndex = append(res.DoneIndex, i)
			res.Done = append(res.Done, e)
		default:
			res.Fetch = append(res.Fetch, i)
		}
	}
	return res, nil
}

func fromObject(c BackfillChunk, o sink.Object, now time.Time) manifest.Entry {
	return manifest.Entry{From: c.From, To: c.To, Key: o.Key, Pages: o.Pages, SHA256: o.RawSHA256, RawBytes: o.RawSize,
		Status: manifest.StatusOK, Skipped: true, Updated: now}
}

// RecordManifestInput adds entries to a dataset's manifest of a backfill.
type RecordManifestInput struct {
	Backfill string           `json:"backfill"`
	Dataset  string           `json:"dataset"`
	Provider string           `json:"provider"`
	Entries  []manifest.Entry `json:"entries"`
}

// RecordManifestResult names the manifest written.
type RecordManifestResult struct {
	Key     string `json:"key"`
	Entries int    `json:"entries"`
}

// RecordManifest merges entries into the dataset's manifest of the
// backfill (one lake object, rewritten atomically). A backfill records a
// batch of chunks at a time; a chunk whose object landed but whose batch
// was never recorded is recovered by the next CheckChunks.
func (a *Activities) RecordManifest(ctx context.Context, in RecordManifestInput) (RecordManifestResult, error) {
	key, err := manifest.Key(in.Dataset, in.Backfill)
	if err != nil {
		return RecordManifestResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadInput, nil)
	}
	head := manifest.Manifest{Backfill: in.Backfill, Dataset: in.Dataset, Provider: in.Provider}
	if err := manifest.Update(ctx, a.cfg.Sink, key, head, in.Entries, time.Now()); err != nil {
		return RecordManifestResult{}, fmt.Errorf("recording %d chunks of %s: %w", len(in.Entries), in.Dataset, err)
	}
	return RecordManifestResult{Key: key, Entries: len(in.Entries)}, nil
}

// badFilter lists unknown names for the planning errors.
func badFilter(unknown []string) string { return strings.Join(unknown, ", ") }
