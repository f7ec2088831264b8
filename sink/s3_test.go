package sink

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluicehq/sluice/internal/versitygw"
)

func openUploads(t *testing.T, client *s3.Client, bucket string) int {
	t.Helper()
	ups, err := client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		t.Fatalf("listing multipart uploads: %v", err)
	}
	return len(ups.Uploads)
}

func TestS3SmallBodyIsOnePut(t *testing.T) {
	srv := versitygw.Start(t)
	s := newTestS3(t, srv)
	k := key(t, "kis", "kis_kospi_daily", 2)
	body := kisDailyIndexChart(50, 1)
	res := put(t, s, k, body, jsonMeta())
	if res.BytesWritten != res.CompressedSize {
		t.Errorf("BytesWritten = %d, want the compressed size %d", res.BytesWritten, res.CompressedSize)
	}
	if res.PeakBuffered > firstBufferSize {
		t.Errorf("a %d-byte object buffered %d bytes, want at most %d", res.CompressedSize, res.PeakBuffered, firstBufferSize)
	}
	if left := s3Leftovers(t, srv.Client(), srv.Bucket); len(left) != 0 {
		t.Errorf("a single put left %v", left)
	}
	// The object's own Content-Type says what the stored bytes are.
	head, err := srv.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &srv.Bucket, Key: &k})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(head.ContentType); got != storedContentType {
		t.Errorf("stored Content-Type = %q, want %q", got, storedContentType)
	}
	if got := head.Metadata[metaRawSHA256]; got != sum(body) {
		t.Errorf("x-amz-meta-%s = %q, want %q", metaRawSHA256, got, sum(body))
	}
}

func TestS3CancelAbortsTheStartedUpload(t *testing.T) {
	srv := versitygw.Start(t)
	s := newTestS3(t, srv)
	client := srv.Client()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inFlight := -1
	body := &hookAfter{r: newNoise(6 * testPartSize), n: 4 * testPartSize, hook: func() {
		inFlight = openUploads(t, client, srv.Bucket)
		cancel()
	}}
	res, err := s.Put(ctx, key(t, "kis", "kis_cancel", 9), body, jsonMeta())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Put error = %v, want context.Canceled", err)
	}
	if inFlight != 1 {
		t.Fatalf("%d multipart uploads open mid-stream, want 1 (the test must cancel a started upload)", inFlight)
	}
	if res.BytesWritten < testPartSize {
		t.Errorf("BytesWritten = %d, want at least one part sent before the cancel", res.BytesWritten)
	}
	if left := s3Leftovers(t, client, srv.Bucket); len(left) != 0 {
		t.Errorf("cancelled put left %v", left)
	}
}

func TestS3ServerKilledMidUpload(t *testing.T) {
	srv := versitygw.Start(t)
	s := newTestS3(t, srv)
	ctx := context.Background()
	k := key(t, "kis", "kis_kospi_daily", 14)
	fresh := key(t, "kis", "kis_kospi_daily", 15)
	old := kisDailyIndexChart(50, 3)
	put(t, s, k, old, jsonMeta())

	for _, target := range []string{k, fresh} {
		started := -1
		body := &hookAfter{r: newNoise(8 * testPartSize), n: 3 * testPartSize, hook: func() {
			started = openUploads(t, srv.Client(), srv.Bucket)
			srv.Kill()
		}}
		if _, err := s.Put(ctx, target, body, jsonMeta()); err == nil {
			t.Fatalf("Put(%s) succeeded although the server was killed mid-upload", target)
		}
		if started < 1 {
			t.Fatalf("no multipart upload had started when the server was killed")
		}
		srv.Restart()
	}

	s = newTestS3(t, srv)
	got, obj := read(t, s, k)
	if !bytes.Equal(got, old) || obj.RawSHA256 != sum(old) {
		t.Errorf("after the crash %s holds %d bytes (sha %s), want the old object", k, len(got), obj.RawSHA256)
	}
	if _, err := s.Stat(ctx, fresh); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat(%s) after a crashed first put: %v, want ErrNotFound", fresh, err)
	}
	objs := listKeys(t, s, "")
	if len(objs) != 1 || objs[0].Key != k {
		t.Errorf("List after the crashes = %+v, want only %s", objs, k)
	}
	// The crashed uploads could not be aborted; they stay invisible (a
	// lifecycle rule removes them), and nothing was staged as an object.
	objsOut, err := srv.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &srv.Bucket, Prefix: aws.String(reservedPrefix)})
	if err != nil {
		t.Fatal(err)
	}
	if len(objsOut.Contents) != 0 {
		t.Errorf("crashed uploads left staged objects: %d", len(objsOut.Contents))
	}
}

// TestS3MemoryIsFlat streams bodies of different sizes and checks the
// sink's own accounting: the bytes it buffers are bounded by part size ×
// (concurrency + 1), whatever the body size. The 1 GiB body takes about
// 25 s under -race on two cores; -short streams 256 MiB instead.
func TestS3MemoryIsFlat(t *testing.T) {
	srv := versitygw.Start(t)
	s := newTestS3(t, srv)
	bound := s.partSize * int64(s.concurrency+1)
	sizes := []int64{64 << 20, 1 << 30}
	if testing.Short() {
		sizes[1] = 256 << 20
	}
	for _, n := range sizes {
		k := key(t, "kis", "kis_flat", int(n>>20)%28+1)
		res, err := s.Put(context.Background(), k, newNoise(n), jsonMeta())
		if err != nil {
			t.Fatal(err)
		}
		if res.RawSize != n || res.CompressedSize < n {
			t.Fatalf("Result = %+v, want %d incompressible raw bytes", res, n)
		}
		if res.PeakBuffered > bound || res.PeakBuffered < s.partSize {
			t.Errorf("%d MiB body: peak buffered %d bytes, want between one part (%d) and %d",
				n>>20, res.PeakBuffered, s.partSize, bound)
		}
		obj := stat(t, s, k)
		if obj.RawSize != n || obj.CompressedSize != res.CompressedSize {
			t.Errorf("stored %+v, want raw %d compressed %d", obj, n, res.CompressedSize)
		}
	}
	// The same bound for an object of many pages.
	w, err := s.Create(context.Background(), key(t, "kis", "kis_flat_paged", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	const pages, pageSize = 64, 4 << 20
	for range pages {
		if _, err := w.WritePage(newNoise(pageSize)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := w.Commit(jsonMeta())
	if err != nil {
		t.Fatal(err)
	}
	if res.Pages != pages || res.RawSize != pages*pageSize || res.PeakBuffered > bound {
		t.Errorf("%d pages of %d MiB: %+v, want peak buffered at most %d", pages, pageSize>>20, res, bound)
	}
}

func TestS3UnchangedMultipartIsAborted(t *testing.T) {
	srv := versitygw.Start(t)
	s := newTestS3(t, srv)
	k := key(t, "kis", "kis_big", 16)
	n := int64(2*testPartSize + 1)
	put(t, s, k, noiseBytes(n), jsonMeta())
	before := stat(t, s, k)
	res := put(t, s, k, noiseBytes(n), jsonMeta())
	if !res.Skipped || res.BytesWritten == 0 {
		t.Errorf("second put of the same body: %+v, want skipped after sending its parts", res)
	}
	if after := stat(t, s, k); after != before {
		t.Errorf("skipped put changed the object: %+v -> %+v", before, after)
	}
	if left := s3Leftovers(t, srv.Client(), srv.Bucket); len(left) != 0 {
		t.Errorf("skipped put left %v", left)
	}
}

func TestS3LargeObjectIsCopiedPartByPart(t *testing.T) {
	srv := versitygw.Start(t)
	s := newTestS3(t, srv)
	s.copyLimit, s.copyPartSize = 1<<20, testPartSize // as if over 5 GiB
	k := key(t, "kis", "kis_huge", 17)
	n := int64(2*testPartSize + testPartSize/3)
	res := put(t, s, k, noiseBytes(n), jsonMeta())
	got, obj := read(t, s, k)
	if !bytes.Equal(got, noiseBytes(n)) || obj.RawSHA256 != res.RawSHA256 || obj.CompressedSize != res.CompressedSize {
		t.Errorf("part-by-part copy stored %d bytes, %+v; want %+v", len(got), obj, res)
	}
	if left := s3Leftovers(t, srv.Client(), srv.Bucket); len(left) != 0 {
		t.Errorf("put left %v", left)
	}
}

func TestS3ForeignObjectsListWithoutMetadata(t *testing.T) {
	srv := versitygw.Start(t)
	s := newTestS3(t, srv)
	ctx := context.Background()
	var zst bytes.Buffer
	l, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.comp.stream(ctx, &zst, strings.NewReader("hello"), nil); err != nil {
		t.Fatal(err)
	}
	k := "provider=x/job=y/year=2025/y_20250101.json.zst"
	if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{
		Bucket: &srv.Bucket, Key: &k, Body: bytes.NewReader(zst.Bytes()),
		Metadata: map[string]string{metaRawSHA256: "not-a-sha"},
	}); err != nil {
		t.Fatal(err)
	}
	obj := stat(t, s, k)
	if obj.HasMeta() || obj.CompressedSize != int64(zst.Len()) {
		t.Errorf("foreign object = %+v, want no metadata and size %d", obj, zst.Len())
	}
	got, _ := read(t, s, k)
	if string(got) != "hello" {
		t.Errorf("Open = %q, want hello", got)
	}
	if objs := listKeys(t, s, ""); len(objs) != 1 || objs[0].HasMeta() {
		t.Errorf("List = %+v, want the one foreign object", objs)
	}
}

func TestS3UnreachableServer(t *testing.T) {
	srv := versitygw.Start(t)
	s := newTestS3(t, srv)
	srv.Kill()
	_, err := s.Put(context.Background(), key(t, "kis", "kis_x", 1), strings.NewReader("{}"), jsonMeta())
	if err == nil || !strings.Contains(err.Error(), "putting provider=kis/") {
		t.Errorf("Put to a dead server: %v, want an error naming the key", err)
	}
}
