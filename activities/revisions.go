package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/sluicehq/sluice/internal/heartbeat"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
	"github.com/sluicehq/sluice/wire"
)

// RevisionLookBack is how many logical days back Revisions looks for the
// object a landed one is compared with: enough to bridge a weekend and the
// longest run of Korean public holidays (설날, 추석), on which daily runs
// land nothing.
const RevisionLookBack = 7

// maxRevisionBytes bounds the raw bytes Revisions reads of one object: a
// daily object is a few KB to a few MB; a larger one (a backfill's range)
// is not compared.
const maxRevisionBytes = 64 << 20

// RevisionsInput names an object a daily run has just landed.
type RevisionsInput struct {
	Dataset string `json:"dataset"`
	Key     string `json:"key"`
}

// RevisionsResult says what the comparison found. Metadata only.
type RevisionsResult struct {
	Dataset string `json:"dataset"`
	Key     string `json:"key"`
	// Earlier is the object compared with; empty when none was found.
	Earlier string `json:"earlier,omitempty"`
	// Common counts the rows (period and keys) both objects hold.
	Common int `json:"common"`
	// Revisions counts the revision Changes recorded; Omitted the revised
	// values beyond watch.MaxRevisions that were not.
	Revisions int `json:"revisions"`
	Omitted   int `json:"omitted,omitempty"`
	// Skipped says why no comparison was made.
	Skipped string `json:"skipped,omitempty"`
}

// Revisions compares the rows of an object a daily run has just landed
// with those of the dataset's most recent earlier object in the lake — the
// same request a logical day earlier, or up to RevisionLookBack days
// earlier, as a range of the same length or a single day — for the periods
// both hold (with a look-back window, consecutive days' objects overlap),
// and records a revision Change for every value that differs (dataset,
// period, old → new; watch.RevisionsOf). It reads both objects from the
// lake, never through Temporal, and only their rows: a few HEADs and two
// small GETs. An earlier object fetched after this one (a later backfill)
// is not compared, nor objects larger than 64 MiB. Recording the same
// comparison again (a retried activity) adds no Change twice.
func (a *Activities) Revisions(ctx context.Context, in RevisionsInput) (RevisionsResult, error) {
	res := RevisionsResult{Dataset: in.Dataset, Key: in.Key}
	ds := a.cfg.Registry.Dataset(in.Dataset)
	if ds == nil {
		return res, temporal.NewNonRetryableApplicationError(fmt.Sprintf("dataset %q is not in the registry", in.Dataset), ErrTypeUnknownDataset, nil)
	}
	spec, err := sink.ParseKey(in.Key)
	if err != nil || spec.Dataset != ds.ID {
		return res, temporal.NewNonRetryableApplicationError(fmt.Sprintf("revisions of %s: key %q is not one of the dataset's objects", ds.ID, in.Key), ErrTypeBadInput, nil)
	}
	switch {
	case a.cfg.Watch == nil:
		res.Skipped = "no watch store"
		return res, nil
	case ds.Wire == nil:
		res.Skipped = "the dataset's connector declares no row facts"
		return res, nil
	}
	defer heartbeat.Every(ctx, 5*time.Second)()
	cur, err := a.cfg.Sink.Stat(ctx, in.Key)
	if err != nil {
		return res, fmt.Errorf("revisions of %s: %w", ds.ID, err)
	}
	prev, ok, err := a.earlierObject(ctx, spec)
	if err != nil {
		return res, fmt.Errorf("revisions of %s: finding the earlier object: %w", ds.ID, err)
	}
	if !ok {
		res.Skipped = fmt.Sprintf("no object of the %d logical days before", RevisionLookBack)
		return res, nil
	}
	res.Earlier = prev.Key
	if prev.FetchedAt.After(cur.FetchedAt) {
		res.Skipped = "the earlier object was fetched after this one"
		return res, nil
	}
	if cur.RawSize > maxRevisionBytes || prev.RawSize > maxRevisionBytes {
		res.Skipped = "an object is larger than 64 MiB"
		return res, nil
	}
	newRows, err := a.rowsOf(ctx, in.Key, ds.Wire.Rows)
	if err != nil {
		res.Skipped = err.Error()
		return res, nil
	}
	oldRows, err := a.rowsOf(ctx, prev.Key, ds.Wire.Rows)
	if err != nil {
		res.Skipped = err.Error()
		return res, nil
	}
	res.Common = common(oldRows, newRows)
	changes, omitted := watch.RevisionsOf(time.Now(), ds.ID, watch.CycleOf(a.cfg.Registry, ds), oldRows, newRows)
	res.Omitted = omitted
	if len(changes) == 0 {
		return res, nil
	}
	// A retried activity, or the same comparison made again, must not
	// record its Changes twice: skip those already recorded since this
	// object was fetched.
	known, err := a.cfg.Watch.Changes(ctx, store.ChangeFilter{Datasets: []string{ds.ID}, Kinds: []watch.ChangeKind{watch.ChangeRevision},
		Since: cur.FetchedAt.Add(-time.Second), Limit: store.MaxLimit})
	if err != nil {
		return res, fmt.Errorf("revisions of %s: reading recorded revisions: %w", ds.ID, err)
	}
	seen := map[string]bool{}
	for _, c := range known {
		seen[c.Summary] = true
	}
	var fresh []watch.Change
	for _, c := range changes {
		if !seen[c.Normalize().Summary] {
			fresh = append(fresh, c)
		}
	}
	if _, err := a.cfg.Watch.AddChanges(ctx, fresh...); err != nil {
		return res, fmt.Errorf("revisions of %s: recording: %w", ds.ID, err)
	}
	res.Revisions = len(fresh)
	for _, c := range fresh {
		a.log.Info("watch change", "dataset", c.Dataset, "kind", c.Kind, "period", c.Period, "from", c.From, "to", c.To)
	}
	return res, nil
}

// earlierObject finds the dataset's object of the same request shape one
// to RevisionLookBack logical days before spec: a range of the same
// length shifted back, else a single day.
func (a *Activities) earlierObject(ctx context.Context, spec sink.KeySpec) (sink.Object, bool, error) {
	span := 0
	if !spec.To.IsZero() {
		span = int(spec.To.Sub(spec.From).Hours()/24 + 0.5)
	}
	for back := 1; back <= RevisionLookBack; back++ {
		var cands []sink.KeySpec
		s := spec
		s.From = spec.From.AddDate(0, 0, -back)
		s.To = time.Time{}
		if span > 0 {
			s.To = s.From.AddDate(0, 0, span)
			one := s
			one.To = time.Time{}
			cands = append(cands, s, one)
		} else {
			cands = append(cands, s)
		}
		for _, c := range cands {
			key, err := sink.Key(c)
			if err != nil {
				return sink.Object{}, false, err
			}
			o, err := a.cfg.Sink.Stat(ctx, key)
			switch {
			case err == nil:
				return o, true, nil
			case !errors.Is(err, sink.ErrNotFound):
				return sink.Object{}, false, err
			}
		}
	}
	return sink.Object{}, false, nil
}

// rowsOf reads the rows of every page of an object.
func (a *Activities) rowsOf(ctx context.Context, key string, facts wire.Rows) ([]wire.Row, error) {
	pages, err := a.cfg.Sink.Pages(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("reading the pages of %s: %w", key, err)
	}
	var out []wire.Row
	for n := 1; n <= len(pages); n++ {
		rc, _, err := a.cfg.Sink.OpenPage(ctx, key, n)
		if err != nil {
			return nil, fmt.Errorf("reading page %d of %s: %w", n, key, err)
		}
		body, err := io.ReadAll(io.LimitReader(rc, maxRevisionBytes+1))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("reading page %d of %s: %w", n, key, err)
		}
		if len(body) > maxRevisionBytes {
			return nil, fmt.Errorf("page %d of %s is larger than 64 MiB", n, key)
		}
		rows, err := wire.Extract(body, facts)
		if err != nil {
			return nil, fmt.Errorf("page %d of %s: %w", n, key, err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// common counts the rows (by period and keys) both sides hold.
func common(old, new []wire.Row) int {
	ids := make(map[string]bool, len(old))
	for _, r := range old {
		ids[r.ID()] = true
	}
	n := 0
	for _, r := range new {
		if ids[r.ID()] {
			n++
			delete(ids, r.ID())
		}
	}
	return n
}
