//go:build linux

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/workflows"
)

// tempPrefix is how the local lake names its temporary files (see
// sink.Local.Put).
const tempPrefix = ".sluice-tmp-"

// planned lists the registry's datasets a batch over providers (all when
// none) must report, by id.
func planned(providers ...string) []string {
	var out []string
	for _, d := range reg.Datasets {
		if d.Request.Declared() && (len(providers) == 0 || slices.Contains(providers, d.Provider)) {
			out = append(out, d.ID)
		}
	}
	return out
}

// byDataset checks that a batch's result reports every planned dataset
// exactly once, with counts that add up, and returns the results by id.
func byDataset(t *testing.T, res workflows.DailyIngestResult, date string, plan []string) map[string]workflows.DatasetResult {
	t.Helper()
	if res.Date != date {
		t.Errorf("result date %q, want %q", res.Date, date)
	}
	out := map[string]workflows.DatasetResult{}
	counts := map[string]int{}
	for _, r := range res.Results {
		if _, dup := out[r.Dataset]; dup {
			t.Errorf("dataset %s reported twice", r.Dataset)
		}
		out[r.Dataset] = r
		counts[r.Status]++
		if want := reg.Dataset(r.Dataset); want == nil || want.Provider != r.Provider {
			t.Errorf("result for %s names provider %q, not the registry's", r.Dataset, r.Provider)
		}
	}
	for _, id := range plan {
		if _, ok := out[id]; !ok {
			t.Errorf("dataset %s is missing from the result", id)
		}
	}
	if len(res.Results) != len(plan) {
		t.Errorf("result lists %d datasets, want %d", len(res.Results), len(plan))
	}
	if counts[workflows.StatusOK] != res.Succeeded || counts[workflows.StatusNoData] != res.NoData || counts[workflows.StatusFailed] != res.Failed {
		t.Errorf("result counts ok %d, no data %d, failed %d; its statuses say %v", res.Succeeded, res.NoData, res.Failed, counts)
	}
	return out
}

// checkSucceeded fails the test for every dataset not ok or no_data,
// except those expect names as failing, which must have failed.
func checkSucceeded(t *testing.T, results map[string]workflows.DatasetResult, failing func(id string) bool) {
	t.Helper()
	for _, id := range sortedKeys(results) {
		r := results[id]
		switch {
		case failing != nil && failing(id):
			if r.Status != workflows.StatusFailed {
				t.Errorf("%s: status %s, want failed", id, r.Status)
			}
		case r.Status != workflows.StatusOK && r.Status != workflows.StatusNoData:
			t.Errorf("%s: status %s [%s] %s", id, r.Status, r.ErrorType, r.Error)
		case r.Status == workflows.StatusOK && (r.Key == "" || r.SHA256 == "" || r.RawBytes <= 0 || r.CompressedBytes <= 0):
			t.Errorf("%s: ok without complete metadata: %+v", id, r)
		}
	}
}

// checkLimits asserts what the simulator saw kept every declared limit:
// no call over a limit (no violation, no rejection but those of a
// RejectAtFraction fault on the providers in faulted), every scope's
// busiest window within its count, no two calls closer than the minimum
// interval. Every provider in active must have had calls. It returns how
// many scopes with a minimum interval saw two calls or more (where the gap
// check says something).
func checkLimits(t *testing.T, st simulator.Stats, faulted map[string]bool, active []string) int {
	t.Helper()
	gaps := 0
	called := map[string]int64{}
	for _, id := range sortedKeys(st.Scopes) {
		s := st.Scopes[id]
		called[s.Provider] += s.Calls
		if s.Violations != 0 || s.Rejected != 0 || s.TokenRejected != 0 {
			t.Errorf("scope %s: %d violations (%d calls rejected over a limit, %d token requests rejected)", id, s.Violations, s.Rejected, s.TokenRejected)
			if v := s.FirstViolation; v != nil {
				t.Errorf("scope %s: first violation (%s, %s): %s", id, v.Reason, v.Field, describeArrival(v.Call, v.Previous))
			}
		}
		if s.RejectedByFault != 0 && !faulted[s.Provider] {
			t.Errorf("scope %s: %d calls rejected by a fault that was not set", id, s.RejectedByFault)
		}
		for field, peak := range s.MaxInWindow {
			if limit, ok := s.Limits[field]; !ok || peak > limit {
				t.Errorf("scope %s: %d calls in one %s window (%.0f ms), declared %d", id, peak, field, s.WindowMS[field], limit)
			}
		}
		if s.MinIntervalMS > 0 && s.MinGapAllMS != nil && len(s.MinGapCalls) == 2 {
			t.Logf("scope %s: smallest gap %.3f ms (interval %.3f ms), counted up to %.3f ms after arrival: %s", id, *s.MinGapAllMS, s.MinIntervalMS,
				s.MaxStampLagMS, describeArrival(s.MinGapCalls[1], &s.MinGapCalls[0]))
		}
		if s.MinIntervalMS > 0 && s.MinGapAllMS != nil {
			gaps++
			if *s.MinGapAllMS < s.MinIntervalMS {
				t.Errorf("scope %s: two calls %.3f ms apart, minimum interval %.3f ms", id, *s.MinGapAllMS, s.MinIntervalMS)
				if len(s.MinGapCalls) == 2 {
					t.Errorf("scope %s: the two calls: %s", id, describeArrival(s.MinGapCalls[1], &s.MinGapCalls[0]))
				}
			}
		}
	}
	for _, p := range active {
		if called[p] == 0 {
			t.Errorf("provider %s: no call reached the simulator", p)
		}
	}
	return gaps
}

// lakeObject is one object found in the lake.
type lakeObject struct {
	obj sink.Object
	raw []byte
}

// openLake opens the cluster's lake as the workers do.
func (c *cluster) openLake() sink.Sink {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := sink.Config{LocalDir: filepath.Join(c.dataDir, "lake")}
	if c.s3 != nil {
		cfg.S3Bucket, cfg.S3Endpoint, cfg.S3Region, cfg.Credentials = c.s3.Bucket, c.s3.Endpoint, c.s3.Region, c.s3.Credentials()
	}
	lake, err := cfg.Open(ctx)
	if err != nil {
		c.t.Fatalf("opening the lake: %v", err)
	}
	c.t.Cleanup(func() { _ = lake.Close() })
	return lake
}

// readLake lists every object of the lake outside the reserved _sluice/
// prefix and reads it back decompressed.
func (c *cluster) readLake() map[string]lakeObject {
	c.t.Helper()
	lake := c.openLake()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var keys []string
	err := lake.List(ctx, "", func(o sink.Object) error {
		if !strings.HasPrefix(o.Key, "_sluice/") {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		c.t.Fatalf("listing the lake: %v", err)
	}
	out := map[string]lakeObject{}
	for _, k := range keys {
		if _, dup := out[k]; dup {
			c.t.Errorf("the lake lists %s twice", k)
		}
		rc, obj, err := lake.Open(ctx, k)
		if err != nil {
			c.t.Errorf("opening %s: %v", k, err)
			continue
		}
		raw, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			c.t.Errorf("decompressing %s: %v", k, err)
			continue
		}
		out[k] = lakeObject{obj: obj, raw: raw}
	}
	return out
}

// localFiles walks the local lake's directory: every object file by key,
// and the temporary files.
func (c *cluster) localFiles() (objects, temps []string) {
	c.t.Helper()
	root := filepath.Join(c.dataDir, "lake")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") {
			temps = append(temps, p)
			return nil
		}
		objects = append(objects, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		c.t.Fatalf("walking the lake: %v", err)
	}
	return objects, temps
}

// checkLake asserts that the lake holds exactly one complete object per ok
// dataset, at its key, whose metadata match the batch's result and whose
// bytes are what the simulator serves for the same request at the same
// time (see replay); that no_data datasets are no data at the simulator
// too; and that nothing else is there: no temporary file (but the orphans
// a killed worker left, which orphans names) and, on S3, no unfinished
// multipart upload.
func (c *cluster) checkLake(results map[string]workflows.DatasetResult, date string, orphans map[string]bool) {
	c.t.Helper()
	t := c.t
	objects := c.readLake()
	want := map[string]string{} // key → dataset
	var ids []string
	for _, id := range sortedKeys(results) {
		r := results[id]
		if r.Status == workflows.StatusFailed {
			continue
		}
		ids = append(ids, id)
		if r.Status == workflows.StatusOK {
			if other, dup := want[r.Key]; dup {
				t.Errorf("datasets %s and %s share key %s", other, id, r.Key)
			}
			want[r.Key] = id
		}
	}
	for _, k := range sortedKeys(objects) {
		if _, ok := want[k]; !ok && !c.otherKeys[k] {
			t.Errorf("the lake holds %s, which no ok dataset of the batch wrote", k)
		}
	}
	secrets := simulator.TestCredentials(reg)
	for _, k := range sortedKeys(want) {
		id := want[k]
		r := results[id]
		o, ok := objects[k]
		if !ok {
			t.Errorf("%s: no object at %s", id, k)
			continue
		}
		sum := sha256.Sum256(o.raw)
		switch {
		case hex.EncodeToString(sum[:]) != r.SHA256:
			t.Errorf("%s: the object's bytes hash to %x, the result says %s", id, sum, r.SHA256)
		case o.obj.RawSHA256 != r.SHA256:
			t.Errorf("%s: the object's metadata say SHA-256 %s, the result %s", id, o.obj.RawSHA256, r.SHA256)
		case int64(len(o.raw)) != r.RawBytes || o.obj.RawSize != r.RawBytes:
			t.Errorf("%s: %d raw bytes (metadata %d), the result says %d", id, len(o.raw), o.obj.RawSize, r.RawBytes)
		case o.obj.CompressedSize != r.CompressedBytes:
			t.Errorf("%s: metadata say %d compressed bytes, the result %d", id, o.obj.CompressedSize, r.CompressedBytes)
		case o.obj.ContentType == "" || o.obj.SourceURL == "" || o.obj.FetchedAt.IsZero() || o.obj.Writer == "":
			t.Errorf("%s: incomplete metadata %+v", id, o.obj)
		}
		for env, v := range secrets {
			if v != "" && strings.Contains(o.obj.SourceURL, v) {
				t.Errorf("%s: the recorded source URL holds the value of %s", id, env)
			}
		}
	}

	if c.s3 != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		up, err := c.s3.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(c.s3.Bucket)})
		if err != nil {
			t.Errorf("listing multipart uploads: %v", err)
		} else if len(up.Uploads) > 0 {
			t.Errorf("%d multipart uploads left unfinished, the first at %s", len(up.Uploads), aws.ToString(up.Uploads[0].Key))
		}
	} else {
		files, temps := c.localFiles()
		for _, f := range files {
			if _, ok := objects[f]; !ok && !strings.HasPrefix(f, "_sluice/") {
				t.Errorf("the lake directory holds %s, which is no object", f)
			}
		}
		for _, p := range temps {
			if !orphans[p] {
				t.Errorf("temporary file %s left in the lake", p)
			}
		}
	}

	// The simulator's bytes for the same requests.
	again := c.replayAll(ids, date)
	for _, id := range ids {
		r, f := results[id], again[id]
		if _, ok := again[id]; !ok {
			continue // reported by replayAll
		}
		switch {
		case f.noData && r.Status != workflows.StatusNoData:
			t.Errorf("%s: the batch says %s, the simulator answers no data", id, r.Status)
		case !f.noData && r.Status == workflows.StatusNoData:
			t.Errorf("%s: the batch says no data, the simulator answers %d bytes", id, len(f.body))
		case r.Status == workflows.StatusOK:
			key, err := sink.Key(sink.KeySpec{Provider: r.Provider, Dataset: id, From: mustDate(t, date), Ext: f.ext})
			if err != nil || key != r.Key {
				t.Errorf("%s: key %s, want %s (%v)", id, r.Key, key, err)
			}
			if o, ok := objects[r.Key]; ok && !bytes.Equal(o.raw, f.body) {
				t.Errorf("%s: the lake holds %d bytes that differ from the simulator's %d", id, len(o.raw), len(f.body))
			}
		}
	}
}

func mustDate(t testing.TB, s string) time.Time {
	t.Helper()
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// providersOf lists the providers of datasets, each once.
func providersOf(ids []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		p := reg.Dataset(id).Provider
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// checkEveryProviderStored asserts each provider stored at least one
// object, so that "ok or no data" is not met by no data alone.
func checkEveryProviderStored(t *testing.T, results map[string]workflows.DatasetResult, providers []string) {
	t.Helper()
	ok := map[string]int{}
	for _, r := range results {
		if r.Status == workflows.StatusOK {
			ok[r.Provider]++
		}
	}
	for _, p := range providers {
		if ok[p] == 0 {
			t.Errorf("provider %s stored nothing", p)
		}
	}
}

// datasetOfPath is the dataset whose key directory holds a lake file
// (provider=P/job=D/year=Y/...).
func datasetOfPath(lakeRoot, p string) string {
	rel, err := filepath.Rel(lakeRoot, p)
	if err != nil {
		return ""
	}
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if id, ok := strings.CutPrefix(part, "job="); ok {
			return id
		}
	}
	return ""
}

// describeArrival tells when a call and the one before it reached the
// simulator: the kernel's receive times, the server's reads and the
// simulator's stamps (what it counted), with each gap, and from which
// connection each came.
func describeArrival(call simulator.Arrival, prev *simulator.Arrival) string {
	if prev == nil {
		return fmt.Sprintf("call from %s (%s) stamped %s, no call before it", call.Remote, call.Dataset, call.Stamped.Format("15:04:05.000000"))
	}
	gap := func(a, b time.Time) string {
		if a.IsZero() || b.IsZero() {
			return "unknown"
		}
		return fmt.Sprintf("%.3f ms", float64(b.Sub(a))/float64(time.Millisecond))
	}
	stamp := func(x time.Time) string {
		if x.IsZero() {
			return "-"
		}
		return x.Format("15:04:05.000000")
	}
	return fmt.Sprintf("earlier from %s: kernel %s, read %s, stamped %s; later from %s: kernel %s, read %s, stamped %s; gap kernel %s, read %s, stamped %s",
		prev.Remote, stamp(prev.Kernel), stamp(prev.Read), stamp(prev.Stamped),
		call.Remote, stamp(call.Kernel), stamp(call.Read), stamp(call.Stamped),
		gap(prev.Kernel, call.Kernel), gap(prev.Read, call.Read), gap(prev.Stamped, call.Stamped))
}
