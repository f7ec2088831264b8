package status

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/sluicehq/sluice/manifest"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/wire"
)

// A day is a civil date counted in days since 1970-01-01.
type day int

func dayOf(t time.Time) day {
	y, m, d := t.Date()
	return day(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

func (d day) time() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

func (d day) String() string { return d.time().Format(time.DateOnly) }

func (d day) weekday() bool {
	wd := d.time().Weekday()
	return wd != time.Saturday && wd != time.Sunday
}

// span is a closed range of days an object (or a manifest chunk) covers.
type span struct{ from, to day }

// LakeObject is one object of a dataset as its key names it.
type LakeObject struct {
	Key string `json:"key"`
	// From and To are the logical dates the key names (To = From for a
	// daily key).
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Fetched  time.Time `json:"fetched,omitzero"`
	Modified time.Time `json:"modified,omitzero"`
}

type datasetObjects struct {
	spans   []span // merged, sorted
	objects int
	newest  LakeObject
}

// LakeIndex is what the lake holds, read from its keys (sink.ParseKey):
// per dataset the days its daily and range keys cover and its newest
// object. Keys Sluice does not build are counted and left out.
type LakeIndex struct {
	Scanned time.Time
	Took    time.Duration
	Objects int
	// Foreign counts the keys that are not Sluice lake keys.
	Foreign int
	// Unregistered counts objects of datasets the registry does not hold.
	Unregistered int
	// Oldest is the first day any object covers (zero: an empty lake).
	Oldest time.Time

	byDataset map[string]*datasetObjects
}

// MaxLakeObjects bounds a scan: a lake with more objects is indexed up to
// it and the index says so (the coverage map is then incomplete).
const MaxLakeObjects = 5_000_000

// ErrLakeTooLarge is returned beside a partial index when a scan stopped at
// MaxLakeObjects.
var ErrLakeTooLarge = errors.New("the lake holds more objects than the status server indexes")

// ScanLake lists the whole lake and indexes its keys. Objects of datasets
// reg does not hold are counted in Unregistered.
func ScanLake(ctx context.Context, lake sink.Sink, reg *registry.Registry, now time.Time) (*LakeIndex, error) {
	ix := &LakeIndex{Scanned: now, byDataset: map[string]*datasetObjects{}}
	start := time.Now()
	raw := map[string][]span{}
	errStop := errors.New("stop")
	oldest := day(0)
	err := lake.List(ctx, "", func(o sink.Object) error {
		if ix.Objects+ix.Foreign >= MaxLakeObjects {
			return errStop
		}
		if manifest.IsKey(o.Key) {
			return nil // a backfill's record, not data
		}
		spec, err := sink.ParseKey(o.Key)
		if err != nil {
			ix.Foreign++
			return nil
		}
		if reg.Dataset(spec.Dataset) == nil {
			ix.Unregistered++
			return nil
		}
		ix.Objects++
		from, to := dayOf(spec.From), dayOf(spec.From)
		if !spec.To.IsZero() {
			to = dayOf(spec.To)
		}
		raw[spec.Dataset] = append(raw[spec.Dataset], span{from, to})
		if oldest == 0 || from < oldest {
			oldest = from
		}
		d := ix.byDataset[spec.Dataset]
		if d == nil {
			d = &datasetObjects{}
			ix.byDataset[spec.Dataset] = d
		}
		d.objects++
		obj := LakeObject{Key: o.Key, From: from.time(), To: to.time(), Fetched: o.FetchedAt, Modified: o.Modified}
		if d.newest.Key == "" || obj.To.After(d.newest.To) || (obj.To.Equal(d.newest.To) && obj.Fetched.After(d.newest.Fetched)) {
			d.newest = obj
		}
		return nil
	})
	for ds, sp := range raw {
		ix.byDataset[ds].spans = mergeSpans(sp)
	}
	if oldest != 0 {
		ix.Oldest = oldest.time()
	}
	ix.Took = time.Since(start)
	if errors.Is(err, errStop) {
		return ix, ErrLakeTooLarge
	}
	if err != nil {
		return nil, fmt.Errorf("listing the lake: %w", err)
	}
	return ix, nil
}

func mergeSpans(sp []span) []span {
	sort.Slice(sp, func(i, j int) bool { return sp[i].from < sp[j].from })
	var out []span
	for _, s := range sp {
		if n := len(out); n > 0 && s.from <= out[n-1].to+1 {
			if s.to > out[n-1].to {
				out[n-1].to = s.to
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// Newest returns the newest object of a dataset (by the last logical date
// its key names) and whether it has any.
func (ix *LakeIndex) Newest(dataset string) (LakeObject, bool) {
	if ix == nil {
		return LakeObject{}, false
	}
	d := ix.byDataset[dataset]
	if d == nil {
		return LakeObject{}, false
	}
	return d.newest, true
}

// ObjectCount is how many objects a dataset has.
func (ix *LakeIndex) ObjectCount(dataset string) int {
	if ix == nil || ix.byDataset[dataset] == nil {
		return 0
	}
	return ix.byDataset[dataset].objects
}

func (ix *LakeIndex) spans(dataset string) []span {
	if ix == nil || ix.byDataset[dataset] == nil {
		return nil
	}
	return ix.byDataset[dataset].spans
}

// ChunkStatus is what a backfill manifest records of one chunk of a
// dataset: Failed (its fetch failed for good) or NoData (the provider had
// nothing for it: no object, yet nothing is missing).
type ChunkStatus struct {
	Dataset string
	From    time.Time // civil dates, both included
	To      time.Time
	Status  string // ChunkFailed or ChunkNoData
}

// Chunk statuses the coverage map reads from backfill manifests.
const (
	ChunkFailed = "failed"
	ChunkNoData = "no_data"
)

// Coverage is what the lake holds of a period of a dataset.
type Coverage string

// The coverage states of a coverage-map cell.
const (
	// Complete: every expected day of the period is covered by an object.
	Complete Coverage = "complete"
	// Partial: some expected days are covered, not all.
	Partial Coverage = "partial"
	// Missing: no expected day is covered.
	Missing Coverage = "missing"
	// Failed: not complete, and a backfill manifest records a failed
	// chunk in the period.
	Failed Coverage = "failed"
	// NotDue: the period has no expected day yet (it is in the future).
	NotDue Coverage = "not_due"
)

// Coverages lists the states in legend order.
var Coverages = []Coverage{Complete, Partial, Missing, Failed, NotDue}

// CoverageCell is one period of one dataset in the coverage map.
type CoverageCell struct {
	Label    string    `json:"label"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	State    Coverage  `json:"state"`
	Expected int       `json:"expected_days"`
	Present  int       `json:"present_days"`
	// FailedChunks counts the manifest's failed chunks in the period.
	FailedChunks int `json:"failed_chunks,omitempty"`
}

// FillCommand is the backfill that fills a run of incomplete periods.
type FillCommand struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Command string `json:"command"`
}

// CoverageRow is one dataset's row of the coverage map.
type CoverageRow struct {
	Dataset  string         `json:"dataset"`
	Provider string         `json:"provider"`
	Name     string         `json:"name"`
	Weekdays bool           `json:"weekdays_only"`
	Objects  int            `json:"objects"`
	Cells    []CoverageCell `json:"cells"`
	Fill     []FillCommand  `json:"fill,omitempty"`
}

// Period is a column of the coverage map: a closed range of civil dates.
type Period struct {
	Label    string
	From, To time.Time
}

// Years returns one column per calendar year from first to last.
func Years(first, last int) []Period {
	var out []Period
	for y := first; y <= last; y++ {
		out = append(out, Period{Label: fmt.Sprint(y), From: time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(y, 12, 31, 0, 0, 0, 0, time.UTC)})
	}
	return out
}

// Months returns one column per month of a year.
func Months(year int) []Period {
	var out []Period
	for m := time.January; m <= time.December; m++ {
		from := time.Date(year, m, 1, 0, 0, 0, 0, time.UTC)
		out = append(out, Period{Label: from.Format("2006-01"), From: from, To: from.AddDate(0, 1, -1)})
	}
	return out
}

// expectation says which days a dataset's lake should hold: every day
// before its provider's today, or only Monday to Friday for a
// business-day series (watch.FreshnessFor's weekdays).
type expectation struct {
	weekdays bool
	last     day // the last expected day: yesterday in the provider's timezone
}

func expectFor(reg *registry.Registry, ds *registry.Dataset, now time.Time) expectation {
	loc := time.UTC
	if p := reg.Provider(ds.Provider); p != nil && p.Location != nil {
		loc = p.Location
	}
	f := watch.FreshnessFor(reg, ds)
	return expectation{weekdays: f.Weekdays && f.Cycle == watch.Daily, last: dayOf(now.In(loc)) - 1}
}

func (e expectation) count(a, b day) int {
	if b < a {
		return 0
	}
	if !e.weekdays {
		return int(b-a) + 1
	}
	return weekdaysBetween(a, b)
}

// weekdaysBetween counts Monday to Friday days in [a, b].
func weekdaysBetween(a, b day) int {
	if b < a {
		return 0
	}
	n := int(b-a) + 1
	full := n / 7
	count := full * 5
	for d := a + day(full*7); d <= b; d++ {
		if d.weekday() {
			count++
		}
	}
	return count
}

// covered counts the expected days of [a, b] that spans cover.
func (e expectation) covered(spans []span, a, b day) int {
	n := 0
	i := sort.Search(len(spans), func(i int) bool { return spans[i].to >= a })
	for ; i < len(spans) && spans[i].from <= b; i++ {
		n += e.count(max(a, spans[i].from), min(b, spans[i].to))
	}
	return n
}

func isCovered(spans []span, d day) bool {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].to >= d })
	return i < len(spans) && spans[i].from <= d
}

// CoverageMap builds the coverage rows of datasets over periods from the
// lake's keys and the manifests' chunk statuses (nil: none known).
// A cell is complete when every expected day is covered, partial when some
// are, missing when none is, failed when not complete and a manifest
// records a failed chunk in it, not_due when it has no expected day yet.
func (ix *LakeIndex) CoverageMap(reg *registry.Registry, datasets []*registry.Dataset, periods []Period, chunks []ChunkStatus, now time.Time) []CoverageRow {
	failed := map[string][]span{}
	nodata := map[string][]span{}
	for _, c := range chunks {
		s := span{dayOf(c.From), dayOf(c.To)}
		if s.to < s.from {
			continue
		}
		switch c.Status {
		case ChunkFailed:
			failed[c.Dataset] = append(failed[c.Dataset], s)
		case ChunkNoData:
			nodata[c.Dataset] = append(nodata[c.Dataset], s)
		}
	}
	var rows []CoverageRow
	for _, ds := range datasets {
		e := expectFor(reg, ds, now)
		spans := ix.spans(ds.ID)
		if nd := nodata[ds.ID]; len(nd) > 0 {
			spans = mergeSpans(append(append([]span(nil), spans...), nd...))
		}
		row := CoverageRow{Dataset: ds.ID, Provider: ds.Provider, Name: ds.Name, Weekdays: e.weekdays, Objects: ix.ObjectCount(ds.ID)}
		for _, p := range periods {
			a, b := dayOf(p.From), min(dayOf(p.To), e.last)
			c := CoverageCell{Label: p.Label, From: p.From, To: p.To}
			c.Expected = e.count(a, b)
			c.Present = e.covered(spans, a, b)
			for _, f := range failed[ds.ID] {
				if f.from <= dayOf(p.To) && f.to >= dayOf(p.From) {
					c.FailedChunks++
				}
			}
			switch {
			case c.Expected == 0:
				c.State = NotDue
			case c.Present >= c.Expected:
				c.State = Complete
			case c.FailedChunks > 0:
				c.State = Failed
			case c.Present > 0:
				c.State = Partial
			default:
				c.State = Missing
			}
			row.Cells = append(row.Cells, c)
		}
		row.Fill = fillCommands(ds.ID, e, spans, row.Cells)
		rows = append(rows, row)
	}
	return rows
}

// fillCommands returns one backfill per run of adjacent incomplete cells:
// from the run's first missing expected day to its last.
func fillCommands(dataset string, e expectation, spans []span, cells []CoverageCell) []FillCommand {
	var out []FillCommand
	for i := 0; i < len(cells); {
		if !incomplete(cells[i].State) {
			i++
			continue
		}
		j := i
		for j+1 < len(cells) && incomplete(cells[j+1].State) {
			j++
		}
		a, b := dayOf(cells[i].From), min(dayOf(cells[j].To), e.last)
		first, last, ok := gapBounds(e, spans, a, b)
		if ok {
			out = append(out, FillCommand{From: first.String(), To: last.String(),
				Command: fmt.Sprintf("sluice backfill start --from %s --to %s --dataset %s", first, last, dataset)})
		}
		i = j + 1
	}
	return out
}

func incomplete(c Coverage) bool { return c == Partial || c == Missing || c == Failed }

func (e expectation) expected(d day) bool { return !e.weekdays || d.weekday() }

// gapBounds finds the first and last expected day of [a, b] no span
// covers.
func gapBounds(e expectation, spans []span, a, b day) (first, last day, ok bool) {
	for d := a; d <= b; d++ {
		if e.expected(d) && !isCovered(spans, d) {
			first, ok = d, true
			break
		}
	}
	if !ok {
		return 0, 0, false
	}
	for d := b; d >= first; d-- {
		if e.expected(d) && !isCovered(spans, d) {
			return first, d, true
		}
	}
	return first, first, true
}

// NewestPeriod is the newest period the lake holds of a dataset and where
// it was read.
type NewestPeriod struct {
	// Period is canonical (watch.Period) when the dataset's cycle is
	// known, else as the provider wrote it; the key's last logical date
	// when no row could be read.
	Period string `json:"period"`
	// Source is "rows" (the newest object's rows, wire.Extract) or "key"
	// (the last logical date its key names).
	Source string `json:"source"`
	Key    string `json:"key"`
	// LogicalDate is the key's last logical date.
	LogicalDate string `json:"logical_date"`
}

// Sources of a NewestPeriod.
const (
	SourceRows = "rows"
	SourceKey  = "key"
)

// MaxExtractBytes bounds what is read of a newest object to find its
// newest row; a larger object's newest period comes from its key.
const MaxExtractBytes = 8 << 20

// newestRow reads an object's pages (up to MaxExtractBytes raw) and
// returns the newest row period its rows hold, canonical when cycle is
// valid.
func newestRow(ctx context.Context, lake sink.Sink, key string, rows wire.Rows, cycle watch.Cycle) (string, error) {
	pages, err := lake.Pages(ctx, key)
	if err != nil {
		return "", err
	}
	var total int64
	for _, p := range pages {
		total += p.RawSize
	}
	if total > MaxExtractBytes {
		return "", fmt.Errorf("object of %d bytes is larger than %d", total, MaxExtractBytes)
	}
	best, bestRaw := watch.Period{}, ""
	for n := 1; n <= len(pages); n++ {
		rc, _, err := lake.OpenPage(ctx, key, n)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		_, err = io.Copy(&buf, io.LimitReader(rc, MaxExtractBytes+1))
		rc.Close()
		if err != nil {
			return "", err
		}
		rs, err := wire.Extract(buf.Bytes(), rows)
		if err != nil {
			continue // a page without rows (an error envelope, an empty page)
		}
		for _, r := range rs {
			if r.Period == "" {
				continue
			}
			if cycle.Valid() {
				if p, err := watch.ParsePeriod(cycle, r.Period); err == nil && (best.IsZero() || best.Before(p)) {
					best = p
				}
			} else if r.Period > bestRaw {
				bestRaw = r.Period
			}
		}
	}
	if !best.IsZero() {
		return best.String(), nil
	}
	if bestRaw != "" {
		return bestRaw, nil
	}
	return "", errors.New("no row with a period")
}
