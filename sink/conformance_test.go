package sink

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluicehq/sluice/internal/version"
	"github.com/sluicehq/sluice/internal/versitygw"
)

// testPartSize is the S3 part size in tests: S3's minimum.
const testPartSize = MinPartSize

// backend is one Sink implementation under the conformance suite.
type backend struct {
	name string
	sink Sink
	// leftovers lists what a failed Put may have left behind in the store
	// (temporary files, staged objects, open multipart uploads).
	leftovers func(t *testing.T) []string
	// raw returns the stored bytes of key exactly as the store holds them.
	raw func(t *testing.T, key string) []byte
	// damage flips the stored byte at offset of key's zstd stream,
	// keeping its metadata: bit rot, or a bad disk.
	damage func(t *testing.T, key string, offset int64)
}

func localBackend(t *testing.T) backend {
	t.Helper()
	l, err := NewLocal(filepath.Join(t.TempDir(), "lake"))
	if err != nil {
		t.Fatal(err)
	}
	return backend{
		name: "local",
		sink: l,
		leftovers: func(t *testing.T) []string {
			var left []string
			_ = filepath.WalkDir(l.Root(), func(p string, d fs.DirEntry, err error) error {
				if err == nil && strings.HasPrefix(d.Name(), ".") {
					left = append(left, p)
				}
				return nil
			})
			return left
		},
		raw: func(t *testing.T, key string) []byte {
			b, err := os.ReadFile(l.path(key))
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		damage: func(t *testing.T, key string, offset int64) {
			b, err := os.ReadFile(l.path(key))
			if err != nil {
				t.Fatal(err)
			}
			b[offset] ^= 0x55
			if err := os.WriteFile(l.path(key), b, 0o644); err != nil {
				t.Fatal(err)
			}
		},
	}
}

func newTestS3(t *testing.T, srv *versitygw.Server) *S3 {
	t.Helper()
	s, err := NewS3(context.Background(), S3Config{
		Bucket:      srv.Bucket,
		Endpoint:    srv.Endpoint,
		Region:      srv.Region,
		PartSize:    testPartSize,
		Concurrency: 2,
		Credentials: srv.Credentials(),
		Logger:      slog.New(slog.NewTextHandler(testLog{t}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testLog sends a sink's log lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func s3Backend(t *testing.T) backend {
	t.Helper()
	srv := versitygw.Start(t)
	s := newTestS3(t, srv)
	client := srv.Client()
	return backend{
		name: "s3",
		sink: s,
		leftovers: func(t *testing.T) []string {
			return s3Leftovers(t, client, srv.Bucket)
		},
		raw: func(t *testing.T, key string) []byte {
			out, err := client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &srv.Bucket, Key: &key})
			if err != nil {
				t.Fatal(err)
			}
			defer out.Body.Close()
			b, err := io.ReadAll(out.Body)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range out.Metadata {
				b = append(b, k+": "+v+"\n"...)
			}
			return b
		},
		damage: func(t *testing.T, key string, offset int64) {
			ctx := context.Background()
			out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: &srv.Bucket, Key: &key})
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			b[offset] ^= 0x55
			if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &srv.Bucket, Key: &key, Body: bytes.NewReader(b),
				Metadata: out.Metadata, ContentType: out.ContentType}); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// s3Leftovers lists staged objects and open multipart uploads.
func s3Leftovers(t *testing.T, client *s3.Client, bucket string) []string {
	t.Helper()
	ctx := context.Background()
	var left []string
	objs, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String(reservedPrefix)})
	if err != nil {
		t.Fatalf("listing staging objects: %v", err)
	}
	for _, o := range objs.Contents {
		left = append(left, "object "+aws.ToString(o.Key))
	}
	ups, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		t.Fatalf("listing multipart uploads: %v", err)
	}
	for _, u := range ups.Uploads {
		left = append(left, "upload "+aws.ToString(u.Key))
	}
	return left
}

func TestConformance(t *testing.T) {
	for _, mk := range []func(*testing.T) backend{localBackend, s3Backend} {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) {
			t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, b) })
			t.Run("EmptyBody", func(t *testing.T) { testEmptyBody(t, b) })
			t.Run("Overwrite", func(t *testing.T) { testOverwrite(t, b) })
			t.Run("UnchangedSkip", func(t *testing.T) { testUnchangedSkip(t, b) })
			t.Run("MultiPartRoundTrip", func(t *testing.T) { testMultiPart(t, b) })
			t.Run("CancelMidStream", func(t *testing.T) { testCancelMidStream(t, b) })
			t.Run("BodyFailsMidStream", func(t *testing.T) { testBodyFails(t, b) })
			t.Run("BadKeys", func(t *testing.T) { testBadKeys(t, b) })
			t.Run("NotFound", func(t *testing.T) { testNotFound(t, b) })
			t.Run("List", func(t *testing.T) { testList(t, b) })
			t.Run("SecretsRedacted", func(t *testing.T) { testSecretsRedacted(t, b) })
			t.Run("PagesRoundTrip", func(t *testing.T) { testPagesRoundTrip(t, b) })
			t.Run("PagesUnchangedSkip", func(t *testing.T) { testPagesUnchangedSkip(t, b) })
			t.Run("PagesFailMidWrite", func(t *testing.T) { testPagesFailMidWrite(t, b) })
			t.Run("DamagedIsRewritten", func(t *testing.T) { testDamagedIsRewritten(t, b) })
			t.Run("WindowRecorded", func(t *testing.T) { testWindowRecorded(t, b) })
		})
	}
}

// key builds a test key for dataset ds on 2025-01-<day>.
func key(t *testing.T, provider, ds string, day int) string {
	t.Helper()
	k, err := Key(KeySpec{Provider: provider, Dataset: ds, From: time.Date(2025, 1, day, 0, 0, 0, 0, time.UTC), Ext: "json"})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var fetchedAt = time.Date(2025, 1, 2, 9, 0, 1, 123456789, time.UTC)

func jsonMeta() Meta {
	return Meta{
		ContentType: "application/json; charset=utf-8",
		SourceURL:   "https://openapi.koreainvestment.com:9443/uapi/domestic-stock/v1/quotations/inquire-daily-indexchartprice?FID_INPUT_ISCD=0001",
		FetchedAt:   fetchedAt,
	}
}

func put(t *testing.T, s Sink, key string, body []byte, meta Meta) Result {
	t.Helper()
	res, err := s.Put(context.Background(), key, bytes.NewReader(body), meta)
	if err != nil {
		t.Fatalf("Put(%s): %v", key, err)
	}
	return res
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// read opens key and returns its raw bytes and object.
func read(t *testing.T, s Sink, key string) ([]byte, Object) {
	t.Helper()
	rc, obj, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("Open(%s): %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	return b, obj
}

func stat(t *testing.T, s Sink, key string) Object {
	t.Helper()
	obj, err := s.Stat(context.Background(), key)
	if err != nil {
		t.Fatalf("Stat(%s): %v", key, err)
	}
	return obj
}

func listKeys(t *testing.T, s Sink, prefix string) []Object {
	t.Helper()
	var objs []Object
	if err := s.List(context.Background(), prefix, func(o Object) error {
		objs = append(objs, o)
		return nil
	}); err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return objs
}

func noLeftovers(t *testing.T, b backend) {
	t.Helper()
	if left := b.leftovers(t); len(left) > 0 {
		t.Errorf("store holds leftovers of failed puts: %v", left)
	}
}

func testRoundTrip(t *testing.T, b backend) {
	k := key(t, "kis", "kis_kospi_daily", 2)
	body := kisDailyIndexChart(50, 1)
	res := put(t, b.sink, k, body, jsonMeta())
	if res.Key != k || res.RawSize != int64(len(body)) || res.RawSHA256 != sum(body) || res.Skipped {
		t.Errorf("Result = %+v, want key %s, raw size %d, sha %s, not skipped", res, k, len(body), sum(body))
	}
	if res.CompressedSize <= 0 || res.CompressedSize >= res.RawSize {
		t.Errorf("compressed size %d for %d raw JSON bytes", res.CompressedSize, res.RawSize)
	}
	if res.BytesWritten < res.CompressedSize {
		t.Errorf("BytesWritten %d < compressed size %d", res.BytesWritten, res.CompressedSize)
	}

	want := Object{
		Key: k, RawSHA256: sum(body), RawSize: int64(len(body)), CompressedSize: res.CompressedSize,
		ContentType: "application/json; charset=utf-8", SourceURL: jsonMeta().SourceURL,
		FetchedAt: fetchedAt, Writer: version.Version, Pages: 1,
	}
	checkObject(t, "Stat", stat(t, b.sink, k), want)
	got, obj := read(t, b.sink, k)
	if !bytes.Equal(got, body) {
		t.Errorf("Open returned %d bytes that differ from the %d put", len(got), len(body))
	}
	checkObject(t, "Open", obj, want)
	objs := listKeys(t, b.sink, "provider=kis/job=kis_kospi_daily/")
	if len(objs) != 1 {
		t.Fatalf("List found %d objects, want 1: %+v", len(objs), objs)
	}
	checkObject(t, "List", objs[0], want)
	if !obj.HasMeta() {
		t.Error("HasMeta() = false for an object the sink wrote")
	}
}

// checkObject compares everything but the store's own Modified time, which
// must merely be set.
func checkObject(t *testing.T, what string, got, want Object) {
	t.Helper()
	if got.Modified.IsZero() {
		t.Errorf("%s: Modified is zero", what)
	}
	if !got.FetchedAt.Equal(want.FetchedAt) {
		t.Errorf("%s: FetchedAt = %v, want %v", what, got.FetchedAt, want.FetchedAt)
	}
	got.Modified, want.Modified = time.Time{}, time.Time{}
	got.FetchedAt, want.FetchedAt = time.Time{}, time.Time{}
	if got != want {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func testEmptyBody(t *testing.T, b backend) {
	k := key(t, "fred", "fred_dgs10", 3)
	res := put(t, b.sink, k, nil, jsonMeta())
	if res.RawSize != 0 || res.RawSHA256 != sum(nil) || res.CompressedSize == 0 {
		t.Errorf("Result = %+v, want an empty raw body in a non-empty zstd frame", res)
	}
	got, obj := read(t, b.sink, k)
	if len(got) != 0 || obj.RawSize != 0 || obj.RawSHA256 != sum(nil) {
		t.Errorf("Open = %d bytes, %+v; want an empty object", len(got), obj)
	}
}

func testOverwrite(t *testing.T, b backend) {
	k := key(t, "ecos", "ecos_ktb3y", 6)
	first, second := ecosStatisticSearch(20, 1), ecosStatisticSearch(21, 2)
	put(t, b.sink, k, first, jsonMeta())
	later := jsonMeta()
	later.FetchedAt = fetchedAt.Add(time.Hour)
	res := put(t, b.sink, k, second, later)
	if res.Skipped {
		t.Fatal("a changed body was skipped")
	}
	got, obj := read(t, b.sink, k)
	if !bytes.Equal(got, second) || obj.RawSHA256 != sum(second) || !obj.FetchedAt.Equal(later.FetchedAt) {
		t.Errorf("after overwrite the object holds %d bytes (sha %s, fetched %v), want the second body", len(got), obj.RawSHA256, obj.FetchedAt)
	}
	if objs := listKeys(t, b.sink, "provider=ecos/job=ecos_ktb3y/"); len(objs) != 1 {
		t.Errorf("List found %d objects after overwriting one key, want 1", len(objs))
	}
}

func testUnchangedSkip(t *testing.T, b backend) {
	k := key(t, "fred", "fred_dgs2", 7)
	body := fredObservations(60, 1)
	put(t, b.sink, k, body, jsonMeta())
	before := stat(t, b.sink, k)
	again := jsonMeta()
	again.FetchedAt = fetchedAt.Add(24 * time.Hour)
	res := put(t, b.sink, k, body, again)
	if !res.Skipped {
		t.Fatalf("unchanged body was rewritten: %+v", res)
	}
	if res.RawSHA256 != sum(body) || res.RawSize != int64(len(body)) {
		t.Errorf("skipped Result = %+v, want the body's size and sha", res)
	}
	after := stat(t, b.sink, k)
	if !after.FetchedAt.Equal(before.FetchedAt) || !after.Modified.Equal(before.Modified) {
		t.Errorf("skipped put changed the object: before %+v, after %+v", before, after)
	}
}

func testMultiPart(t *testing.T, b backend) {
	k := key(t, "kis", "kis_big", 8)
	n := int64(3*testPartSize + testPartSize/2)
	res, err := b.sink.Put(context.Background(), k, newNoise(n), jsonMeta())
	if err != nil {
		t.Fatal(err)
	}
	want := noiseBytes(n)
	if res.RawSize != n || res.RawSHA256 != sum(want) {
		t.Errorf("Result = %+v, want %d raw bytes with sha %s", res, n, sum(want))
	}
	got, obj := read(t, b.sink, k)
	if !bytes.Equal(got, want) {
		t.Errorf("Open returned %d bytes that differ from the %d put", len(got), n)
	}
	if obj.CompressedSize != res.CompressedSize || obj.RawSize != n {
		t.Errorf("stored object %+v does not match Result %+v", obj, res)
	}
	if objs := listKeys(t, b.sink, ""); len(objs) == 0 {
		t.Error("List(\"\") found nothing")
	}
	noLeftovers(t, b)
}

// failMidStream puts old at k, then a multi-part body that body breaks
// partway; the old object must survive untouched and nothing be left.
func failMidStream(t *testing.T, b backend, k string, body func(io.Reader) io.Reader, ctx context.Context, wantErr error) {
	t.Helper()
	old := kisDailyIndexChart(50, 2)
	put(t, b.sink, k, old, jsonMeta())
	n := int64(4 * testPartSize)
	_, err := b.sink.Put(ctx, k, body(newNoise(n)), jsonMeta())
	if !errors.Is(err, wantErr) {
		t.Fatalf("Put error = %v, want %v", err, wantErr)
	}
	got, obj := read(t, b.sink, k)
	if !bytes.Equal(got, old) || obj.RawSHA256 != sum(old) {
		t.Errorf("after a failed put the key holds %d bytes (sha %s), want the old object", len(got), obj.RawSHA256)
	}
	noLeftovers(t, b)

	// And with no previous object, a failed put creates none.
	k2 := strings.Replace(k, ".json.zst", "-new.json.zst", 1)
	ctx2, cancel := context.WithCancel(context.Background())
	defer cancel()
	if wantErr == context.Canceled {
		ctx = ctx2
		body = func(r io.Reader) io.Reader { return &cancelAfter{r: r, n: 2 * testPartSize, cancel: cancel} }
	}
	if _, err := b.sink.Put(ctx, k2, body(newNoise(n)), jsonMeta()); !errors.Is(err, wantErr) {
		t.Fatalf("Put error = %v, want %v", err, wantErr)
	}
	if _, err := b.sink.Stat(context.Background(), k2); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat after a failed first put: %v, want ErrNotFound", err)
	}
	noLeftovers(t, b)
}

func testCancelMidStream(t *testing.T, b backend) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	failMidStream(t, b, key(t, "kis", "kis_cancel", 9), func(r io.Reader) io.Reader {
		return &cancelAfter{r: r, n: 2 * testPartSize, cancel: cancel}
	}, ctx, context.Canceled)
}

func testBodyFails(t *testing.T, b backend) {
	failMidStream(t, b, key(t, "kis", "kis_broken", 10), func(r io.Reader) io.Reader {
		return &errAfter{r: r, n: 2*testPartSize + 12345, err: errBodyBroke}
	}, context.Background(), errBodyBroke)
}

func testBadKeys(t *testing.T, b backend) {
	ctx := context.Background()
	for _, k := range []string{"", "../escape.json.zst", "a/../../b", "/abs", "a//b", "a/./b", "a/.hidden",
		"a/b/", "a\\b", "a b", "_sluice/staging/x", "é", strings.Repeat("a", MaxKeyLen+1)} {
		if _, err := b.sink.Put(ctx, k, strings.NewReader("x"), jsonMeta()); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Put(%q) error = %v, want ErrInvalidKey", k, err)
		}
		if _, err := b.sink.Stat(ctx, k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Stat(%q) error = %v, want ErrInvalidKey", k, err)
		}
		if _, _, err := b.sink.Open(ctx, k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Open(%q) error = %v, want ErrInvalidKey", k, err)
		}
	}
	for _, p := range []string{"../", "/a", "a//", "_sluice/"} {
		if err := b.sink.List(ctx, p, func(Object) error { return nil }); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("List(%q) error = %v, want ErrInvalidKey", p, err)
		}
	}
	noLeftovers(t, b)
}

func testNotFound(t *testing.T, b backend) {
	ctx := context.Background()
	k := key(t, "nobody", "nothing", 11)
	if _, err := b.sink.Stat(ctx, k); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat of a missing key: %v, want ErrNotFound", err)
	}
	if _, _, err := b.sink.Open(ctx, k); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open of a missing key: %v, want ErrNotFound", err)
	}
	// A directory-like prefix of existing keys is not an object.
	put(t, b.sink, key(t, "nobody", "something", 11), []byte("{}"), jsonMeta())
	if _, err := b.sink.Stat(ctx, "provider=nobody/job=something"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat of a key prefix: %v, want ErrNotFound", err)
	}
}

func testList(t *testing.T, b backend) {
	var want []string
	for _, spec := range []KeySpec{
		{Provider: "upbit", Dataset: "upbit_krw_btc", From: time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC), Ext: "json"},
		{Provider: "upbit", Dataset: "upbit_krw_btc", From: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Ext: "json"},
		{Provider: "upbit", Dataset: "upbit_krw_btc", From: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC),
			To: time.Date(2025, 1, 9, 0, 0, 0, 0, time.UTC), Ext: "json"},
		{Provider: "upbit", Dataset: "upbit_krw_btc-x", From: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Ext: "json"},
		{Provider: "upbit", Dataset: "upbit_krw_eth", From: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Ext: "xml"},
	} {
		k, err := Key(spec)
		if err != nil {
			t.Fatal(err)
		}
		put(t, b.sink, k, []byte(`{"k":"`+k+`"}`), jsonMeta())
		want = append(want, k)
	}
	keys := func(objs []Object) string {
		var ks []string
		for _, o := range objs {
			ks = append(ks, o.Key)
		}
		return strings.Join(ks, "\n")
	}
	// S3 order: '-' sorts before '/', so upbit_krw_btc-x comes first.
	all := []string{want[3], want[0], want[1], want[2], want[4]}
	if got := keys(listKeys(t, b.sink, "provider=upbit/")); got != strings.Join(all, "\n") {
		t.Errorf("List(provider=upbit/) =\n%s\nwant\n%s", got, strings.Join(all, "\n"))
	}
	if got := keys(listKeys(t, b.sink, "provider=upbit/job=upbit_krw_btc/year=2025/")); got != strings.Join(want[1:3], "\n") {
		t.Errorf("List(year=2025) =\n%s\nwant\n%s", got, strings.Join(want[1:3], "\n"))
	}
	if got := keys(listKeys(t, b.sink, "provider=upbit/job=upbit_krw_e")); got != want[4] {
		t.Errorf("List(mid-segment prefix) = %s, want %s", got, want[4])
	}
	if got := listKeys(t, b.sink, "provider=none/"); len(got) != 0 {
		t.Errorf("List of an empty prefix found %d objects", len(got))
	}
	stop := errors.New("enough")
	n := 0
	err := b.sink.List(context.Background(), "provider=upbit/", func(Object) error {
		n++
		return stop
	})
	if err != stop || n != 1 {
		t.Errorf("List with a failing fn: err %v after %d calls, want %v after 1", err, n, stop)
	}
}

func testSecretsRedacted(t *testing.T, b backend) {
	k := key(t, "fred", "fred_secret", 13)
	meta := jsonMeta()
	meta.SourceURL = "https://api.stlouisfed.org/fred/series/observations?series_id=DGS10&api_key=abcdef0123456789abcdef0123456789&file_type=json#frag"
	put(t, b.sink, k, fredObservations(5, 1), meta)
	obj := stat(t, b.sink, k)
	wantURL := "https://api.stlouisfed.org/fred/series/observations?series_id=DGS10&api_key=REDACTED&file_type=json"
	if obj.SourceURL != wantURL {
		t.Errorf("SourceURL = %q, want %q", obj.SourceURL, wantURL)
	}
	if bytes.Contains(b.raw(t, k), []byte("abcdef0123456789")) {
		t.Error("the stored object contains the api key")
	}

	// Oversized and non-ASCII metadata still fits S3's header rules.
	k = key(t, "fred", "fred_long_meta", 13)
	meta.ContentType = "application/json; note=" + strings.Repeat("한", 300)
	meta.SourceURL = "https://h/p?q=" + strings.Repeat("값", 1000)
	put(t, b.sink, k, []byte("{}"), meta)
	obj = stat(t, b.sink, k)
	if len(obj.ContentType) != maxContentTypeLen || len(obj.SourceURL) != maxSourceURLLen {
		t.Errorf("long metadata stored as %d-byte content type and %d-byte URL, want %d and %d",
			len(obj.ContentType), len(obj.SourceURL), maxContentTypeLen, maxSourceURLLen)
	}
}

// testWindowRecorded: the window of dates a request asked for is recorded
// with the object and read back by Stat, Open and List; the same bytes
// put with another window are written again, so the metadata always say
// what was asked.
func testWindowRecorded(t *testing.T, b backend) {
	k := key(t, "ecos", "ecos_cpi", 11)
	body := ecosStatisticSearch(6, 3)
	meta := jsonMeta()
	meta.Window = Window{From: time.Date(2024, 8, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2025, 1, 11, 15, 0, 0, 0, time.FixedZone("KST", 9*3600))}
	put(t, b.sink, k, body, meta)
	want := Window{From: time.Date(2024, 8, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2025, 1, 11, 0, 0, 0, 0, time.UTC)}
	if got := stat(t, b.sink, k).Window; got != want || got.String() != "2024-08-01..2025-01-11" {
		t.Errorf("Stat: window %v, want %v", got, want)
	}
	if _, obj := read(t, b.sink, k); obj.Window != want {
		t.Errorf("Open: window %v, want %v", obj.Window, want)
	}
	if objs := listKeys(t, b.sink, "provider=ecos/job=ecos_cpi/"); len(objs) != 1 || objs[0].Window != want {
		t.Errorf("List: %+v", objs)
	}
	if res := put(t, b.sink, k, body, meta); !res.Skipped {
		t.Errorf("the same bytes and window were rewritten: %+v", res)
	}
	other := jsonMeta()
	other.Window = Window{From: want.From.AddDate(0, -1, 0), To: want.To}
	if res := put(t, b.sink, k, body, other); res.Skipped {
		t.Error("the same bytes under another window were skipped: the metadata would not say what was asked")
	}
	if got := stat(t, b.sink, k).Window; got != other.Window {
		t.Errorf("after the second put: window %v, want %v", got, other.Window)
	}
	none := key(t, "ecos", "ecos_cpi", 12)
	put(t, b.sink, none, body, jsonMeta())
	if got := stat(t, b.sink, none).Window; !got.IsZero() || got.String() != "" {
		t.Errorf("an object put without a window reads back %v", got)
	}
}
