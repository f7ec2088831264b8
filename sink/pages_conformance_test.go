package sink

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// The page tests of the conformance suite (TestConformance runs them on
// every backend).

// writePages writes pages as one object at k and commits it.
func writePages(t *testing.T, s Sink, k string, meta Meta, pages ...[]byte) Result {
	t.Helper()
	w, err := s.Create(context.Background(), k)
	if err != nil {
		t.Fatalf("Create(%s): %v", k, err)
	}
	defer w.Abort()
	for i, p := range pages {
		pg, err := w.WritePage(bytes.NewReader(p))
		if err != nil {
			t.Fatalf("WritePage %d: %v", i+1, err)
		}
		if pg.RawSize != int64(len(p)) || pg.RawSHA256 != sum(p) || pg.CompressedSize <= 0 {
			t.Errorf("WritePage %d = %+v, want %d raw bytes with sha %s", i+1, pg, len(p), sum(p))
		}
	}
	res, err := w.Commit(meta)
	if err != nil {
		t.Fatalf("Commit(%s): %v", k, err)
	}
	return res
}

func readPage(t *testing.T, s Sink, k string, n int) ([]byte, Page) {
	t.Helper()
	rc, p, err := s.OpenPage(context.Background(), k, n)
	if err != nil {
		t.Fatalf("OpenPage(%s, %d): %v", k, n, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading page %d of %s: %v", n, k, err)
	}
	return b, p
}

// testPagesRoundTrip: pages come back whole, one by one, and as the
// object's bytes back to back, whose SHA-256 is the one recorded; on S3 the
// pages together pass the part size, so the object is staged and copied.
func testPagesRoundTrip(t *testing.T, b backend) {
	k := key(t, "ecos", "ecos_paged", 14)
	pages := [][]byte{ecosStatisticSearch(1000, 1), noiseBytes(testPartSize + 12345), ecosStatisticSearch(7, 3), {}}
	res := writePages(t, b.sink, k, jsonMeta(), pages...)
	all := bytes.Join(pages, nil)
	if res.Pages != len(pages) || res.RawSize != int64(len(all)) || res.RawSHA256 != sum(all) || res.Skipped {
		t.Errorf("Result = %+v, want %d pages, %d raw bytes, sha %s", res, len(pages), len(all), sum(all))
	}
	obj := stat(t, b.sink, k)
	if obj.Pages != len(pages) || obj.RawSHA256 != sum(all) || obj.RawSize != int64(len(all)) || obj.CompressedSize != res.CompressedSize {
		t.Errorf("Stat = %+v, want %d pages of %d raw bytes", obj, len(pages), len(all))
	}
	got, _ := read(t, b.sink, k)
	if !bytes.Equal(got, all) {
		t.Errorf("Open returned %d bytes, want the %d bytes of the pages back to back", len(got), len(all))
	}
	list, err := b.sink.Pages(context.Background(), k)
	if err != nil || len(list) != len(pages) {
		t.Fatalf("Pages = %+v, %v; want %d pages", list, err, len(pages))
	}
	var off int64
	for i, p := range pages {
		if list[i].RawSize != int64(len(p)) || list[i].RawSHA256 != sum(p) || list[i].Offset != off {
			t.Errorf("page %d = %+v, want %d raw bytes, sha %s at offset %d", i+1, list[i], len(p), sum(p), off)
		}
		off += list[i].CompressedSize
		data, pg := readPage(t, b.sink, k, i+1)
		if !bytes.Equal(data, p) || pg != list[i] {
			t.Errorf("OpenPage %d: %d bytes (%+v), want %d bytes (%+v)", i+1, len(data), pg, len(p), list[i])
		}
	}
	for _, n := range []int{0, len(pages) + 1} {
		if _, _, err := b.sink.OpenPage(context.Background(), k, n); !errors.Is(err, ErrNotFound) {
			t.Errorf("OpenPage(%d) of a %d-page object: %v, want ErrNotFound", n, len(pages), err)
		}
	}
	if err := b.sink.Verify(context.Background(), k); err != nil {
		t.Errorf("Verify of an intact paged object: %v", err)
	}
	if objs := listKeys(t, b.sink, "provider=ecos/job=ecos_paged/"); len(objs) != 1 || objs[0].Pages != len(pages) {
		t.Errorf("List = %+v, want the one object of %d pages", objs, len(pages))
	}
	// A one-page object is its own single page.
	k1 := key(t, "ecos", "ecos_paged", 15)
	body := ecosStatisticSearch(3, 1)
	put(t, b.sink, k1, body, jsonMeta())
	if data, pg := readPage(t, b.sink, k1, 1); !bytes.Equal(data, body) || pg.RawSHA256 != sum(body) || pg.Offset != 0 {
		t.Errorf("page 1 of a one-page object: %d bytes, %+v", len(data), pg)
	}
	noLeftovers(t, b)
}

// testPagesUnchangedSkip: the same pages again are skipped; the same bytes
// split into other pages are not (the page index would be wrong).
func testPagesUnchangedSkip(t *testing.T, b backend) {
	k := key(t, "kis", "kis_paged", 16)
	p1, p2 := kisDailyIndexChart(50, 1), kisDailyIndexChart(50, 2)
	writePages(t, b.sink, k, jsonMeta(), p1, p2)
	before := stat(t, b.sink, k)
	later := jsonMeta()
	later.FetchedAt = fetchedAt.Add(time.Hour)
	if res := writePages(t, b.sink, k, later, p1, p2); !res.Skipped || res.Pages != 2 {
		t.Errorf("the same pages again: %+v, want skipped", res)
	}
	if after := stat(t, b.sink, k); !after.FetchedAt.Equal(before.FetchedAt) {
		t.Errorf("a skipped write changed the object: %+v", after)
	}
	all := append(append([]byte(nil), p1...), p2...)
	if res := writePages(t, b.sink, k, later, all); res.Skipped || res.Pages != 1 {
		t.Errorf("the same bytes as one page: %+v, want rewritten", res)
	}
	if obj := stat(t, b.sink, k); obj.Pages != 1 || obj.RawSHA256 != sum(all) {
		t.Errorf("after rewriting as one page: %+v", obj)
	}
	noLeftovers(t, b)
}

// testPagesFailMidWrite: a page that fails, a cancel between pages and an
// abandoned writer leave no object, and the previous one intact.
func testPagesFailMidWrite(t *testing.T, b backend) {
	k := key(t, "fred", "fred_paged", 17)
	old := fredObservations(40, 1)
	put(t, b.sink, k, old, jsonMeta())
	intact := func(what string) {
		t.Helper()
		got, obj := read(t, b.sink, k)
		if !bytes.Equal(got, old) || obj.Pages != 1 {
			t.Errorf("%s: the key holds %d bytes (%d pages), want the old object", what, len(got), obj.Pages)
		}
		noLeftovers(t, b)
	}

	// Page 2 breaks mid-stream, after page 1 filled more than a part.
	w, err := b.sink.Create(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WritePage(newNoise(2 * testPartSize)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WritePage(&errAfter{r: newNoise(2 * testPartSize), n: testPartSize, err: errBodyBroke}); !errors.Is(err, errBodyBroke) {
		t.Fatalf("WritePage error = %v, want %v", err, errBodyBroke)
	}
	if _, err := w.Commit(jsonMeta()); err == nil {
		t.Error("Commit after a failed page succeeded")
	}
	w.Abort()
	intact("a page failed")

	// The caller gives up between pages.
	ctx, cancel := context.WithCancel(context.Background())
	w, err = b.sink.Create(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WritePage(newNoise(3 * testPartSize)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := w.WritePage(strings.NewReader("page two")); !errors.Is(err, context.Canceled) {
		t.Errorf("WritePage after cancel: %v, want context.Canceled", err)
	}
	if _, err := w.Commit(jsonMeta()); err == nil {
		t.Error("Commit after cancel succeeded")
	}
	w.Abort()
	intact("cancelled between pages")

	// A writer abandoned before Commit, and one that wrote no page.
	w, err = b.sink.Create(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WritePage(newNoise(2 * testPartSize)); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	w.Abort()
	w, err = b.sink.Create(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(jsonMeta()); err == nil {
		t.Error("Commit of no page succeeded")
	}
	w.Abort()
	intact("abandoned")
	k2 := strings.Replace(k, ".json.zst", "-none.json.zst", 1)
	w, err = b.sink.Create(context.Background(), k2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WritePage(strings.NewReader("{}")); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if _, err := b.sink.Stat(context.Background(), k2); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat after an aborted first write: %v, want ErrNotFound", err)
	}
	if _, err := w.WritePage(strings.NewReader("{}")); err == nil {
		t.Error("WritePage after Abort succeeded")
	}
}

// testDamagedIsRewritten: a re-put of unchanged bytes over a
// damaged object rewrites it instead of trusting the recorded SHA-256, and
// Verify tells damaged from intact — for a one-page object, a page of a
// paged one, and a paged object's index.
func testDamagedIsRewritten(t *testing.T, b backend) {
	ctx := context.Background()
	one := kisDailyIndexChart(50, 5)
	p1, p2 := ecosStatisticSearch(300, 1), ecosStatisticSearch(300, 2)
	cases := []struct {
		name   string
		pages  [][]byte
		offset func(obj Object, pages []Page) int64 // the stored byte to damage
	}{
		{"one page", [][]byte{one}, func(_ Object, p []Page) int64 { return p[0].CompressedSize / 2 }},
		{"second page", [][]byte{p1, p2}, func(_ Object, p []Page) int64 { return p[1].Offset + p[1].CompressedSize/2 }},
		{"page index", [][]byte{p1, p2}, func(o Object, p []Page) int64 {
			last := p[len(p)-1]
			return last.Offset + last.CompressedSize + 20 // inside the index JSON
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := key(t, "kis", "kis_damaged", 18+i)
			writePages(t, b.sink, k, jsonMeta(), tc.pages...)
			if err := b.sink.Verify(ctx, k); err != nil {
				t.Fatalf("Verify of the intact object: %v", err)
			}
			pages, err := b.sink.Pages(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			b.damage(t, k, tc.offset(stat(t, b.sink, k), pages))
			if err := b.sink.Verify(ctx, k); !errors.Is(err, ErrDamaged) {
				t.Fatalf("Verify of the damaged object: %v, want ErrDamaged", err)
			}
			res := writePages(t, b.sink, k, jsonMeta(), tc.pages...)
			if res.Skipped {
				t.Fatal("a re-put over a damaged object was skipped")
			}
			if err := b.sink.Verify(ctx, k); err != nil {
				t.Errorf("Verify after the rewrite: %v", err)
			}
			got, _ := read(t, b.sink, k)
			if !bytes.Equal(got, bytes.Join(tc.pages, nil)) {
				t.Errorf("after the rewrite the object holds %d bytes, want the pages", len(got))
			}
			if res := writePages(t, b.sink, k, jsonMeta(), tc.pages...); !res.Skipped {
				t.Error("a re-put over the repaired object was not skipped")
			}
			noLeftovers(t, b)
		})
	}
	if err := b.sink.Verify(ctx, key(t, "kis", "kis_damaged", 28)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Verify of a missing key: %v, want ErrNotFound", err)
	}
}
