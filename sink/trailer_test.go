package sink

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

func testRecord() record {
	return record{
		RawSHA256: strings.Repeat("ab", 32), RawSize: 1843, CompressedSize: 297,
		ContentType: "application/json", SourceURL: "https://h/p?api_key=REDACTED",
		FetchedAt: time.Date(2025, 1, 2, 9, 0, 0, 0, time.UTC), Writer: "v1.2.3",
	}
}

func TestTrailerRoundTrip(t *testing.T) {
	data := []byte("pretend zstd frames")
	file, err := appendTrailer(append([]byte(nil), data...), testRecord())
	if err != nil {
		t.Fatal(err)
	}
	rec, n, err := readTrailer(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if rec != testRecord() {
		t.Errorf("read back %+v, want %+v", rec, testRecord())
	}
	if int64(len(file))-n != int64(len(data)) {
		t.Errorf("trailer length %d leaves %d data bytes, want %d", n, int64(len(file))-n, len(data))
	}
}

// TestTrailerIsInvisibleToZstd: a plain zstd decoder reads a local lake
// file as the raw bytes, skipping the metadata frame.
func TestTrailerIsInvisibleToZstd(t *testing.T) {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := kisDailyIndexChart(50, 1)
	file, err := appendTrailer(enc.EncodeAll(raw, nil), testRecord())
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	got, err := io.ReadAll(dec)
	if err != nil {
		t.Fatalf("decoding a file with a trailer: %v", err)
	}
	if !bytes.Equal(got, raw) {
		t.Errorf("decoded %d bytes, want the %d raw bytes", len(got), len(raw))
	}
}

func TestTrailerAbsentOrDamaged(t *testing.T) {
	good, _ := appendTrailer([]byte("data"), testRecord())
	for name, file := range map[string][]byte{
		"empty":        nil,
		"plain zstd":   []byte("\x28\xb5\x2f\xfd\x00\x00\x01\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"),
		"bad json":     bytes.Replace(good, []byte(`"raw_sha256"`), []byte(`"raw_sha256`), 1),
		"bad sha":      bytes.Replace(good, []byte("abab"), []byte("zzzz"), 1),
		"truncated":    good[5:],
		"huge length":  append(good[:len(good)-8], 0xff, 0xff, 0xff, 0x7f, 'S', 'L', 'M', 'D'),
		"bad magic":    append([]byte("data\x00\x00\x00\x00"), good[12:]...),
		"only trailer": good[4+8:],
	} {
		if _, _, err := readTrailer(bytes.NewReader(file), int64(len(file))); !errors.Is(err, errNoTrailer) {
			t.Errorf("%s: readTrailer error = %v, want errNoTrailer", name, err)
		}
	}
}

func FuzzReadTrailer(f *testing.F) {
	good, _ := appendTrailer([]byte("data"), testRecord())
	f.Add(good)
	f.Add([]byte("SLMD"))
	f.Add(append([]byte("\x5c\x2a\x4d\x18\x0a\x00\x00\x00{}"), 2, 0, 0, 0, 'S', 'L', 'M', 'D'))
	f.Fuzz(func(t *testing.T, file []byte) {
		rec, n, err := readTrailer(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			return
		}
		if n <= 0 || n > int64(len(file)) {
			t.Fatalf("trailer length %d in a %d-byte file", n, len(file))
		}
		if err := rec.validate(); err != nil {
			t.Fatalf("accepted an invalid record %+v: %v", rec, err)
		}
	})
}

// TestRecordBoundsThePageIndex: a record read back from a store may not
// make a reader allocate more than the largest index Sluice writes.
func TestRecordBoundsThePageIndex(t *testing.T) {
	ok := record{RawSHA256: strings.Repeat("a", 64), CompressedSize: 10 << 30, Pages: 3, PageIndexSize: 400}
	if err := ok.validate(); err != nil {
		t.Fatalf("a sound record: %v", err)
	}
	for _, r := range []record{
		{RawSHA256: ok.RawSHA256, CompressedSize: 10 << 30, Pages: 3, PageIndexSize: 5 << 30},
		{RawSHA256: ok.RawSHA256, CompressedSize: 100, Pages: 3, PageIndexSize: 200},
		{RawSHA256: ok.RawSHA256, CompressedSize: 100, Pages: 3, PageIndexSize: 0},
		{RawSHA256: ok.RawSHA256, CompressedSize: 100, Pages: 1, PageIndexSize: 40},
		{RawSHA256: ok.RawSHA256, CompressedSize: 100, Pages: -2},
	} {
		if err := r.validate(); err == nil {
			t.Errorf("record %+v validates", r)
		}
	}
	if _, ok := recordFromHeaders(map[string]string{metaRawSHA256: ok.RawSHA256, metaRawSize: "1", metaCompressedSize: "10737418240",
		metaPages: "3", metaPageIndexSize: "5368709120"}); ok {
		t.Error("headers announcing a 5 GiB page index were accepted")
	}
}

// TestRecordWindow: a record's window is two dates in order, or none; any
// other value read back from a store is rejected (the object then lists
// without metadata and fails verification).
func TestRecordWindow(t *testing.T) {
	sha := strings.Repeat("a", 64)
	for _, r := range []record{
		{RawSHA256: sha, WindowFrom: "2026-06-01", WindowTo: "2026-11-30"},
		{RawSHA256: sha, WindowFrom: "2026-11-30", WindowTo: "2026-11-30"},
		{RawSHA256: sha},
	} {
		if err := r.validate(); err != nil {
			t.Errorf("record %+v: %v", r, err)
		}
	}
	for _, r := range []record{
		{RawSHA256: sha, WindowFrom: "2026-11-30", WindowTo: "2026-06-01"},
		{RawSHA256: sha, WindowFrom: "2026-06-01"},
		{RawSHA256: sha, WindowTo: "2026-06-01"},
		{RawSHA256: sha, WindowFrom: "20260601", WindowTo: "20261130"},
		{RawSHA256: sha, WindowFrom: "2026-02-30", WindowTo: "2026-03-01"},
	} {
		if err := r.validate(); err == nil {
			t.Errorf("record %+v validates", r)
		}
	}
	base := map[string]string{metaRawSHA256: sha, metaRawSize: "1", metaCompressedSize: "10"}
	h := map[string]string{metaWindowFrom: "2026-06-01", metaWindowTo: "2026-11-30"}
	for k, v := range base {
		h[k] = v
	}
	r, ok := recordFromHeaders(h)
	if !ok || r.window().String() != "2026-06-01..2026-11-30" || r.headers()[metaWindowTo] != "2026-11-30" {
		t.Errorf("headers with a window: %+v %v", r, ok)
	}
	h[metaWindowTo] = "2026-13-01"
	if _, ok := recordFromHeaders(h); ok {
		t.Error("headers with a bad window were accepted")
	}
}
