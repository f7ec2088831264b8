package sink

import (
	"strings"
	"testing"
)

func TestParsePageIndex(t *testing.T) {
	pages := []Page{
		{RawSize: 10, RawSHA256: strings.Repeat("a", 64), Offset: 0, CompressedSize: 20},
		{RawSize: 5, RawSHA256: strings.Repeat("b", 64), Offset: 20, CompressedSize: 15},
	}
	idx, err := appendPageIndex(nil, pages)
	if err != nil {
		t.Fatal(err)
	}
	rec := record{RawSHA256: strings.Repeat("c", 64), RawSize: 15, CompressedSize: 35 + int64(len(idx)), Pages: 2, PageIndexSize: int64(len(idx))}
	got, err := parsePageIndex(idx, rec)
	if err != nil || !samePages(got, pages) || got[1].Offset != 20 {
		t.Fatalf("parsePageIndex = %+v, %v", got, err)
	}
	for name, r := range map[string]record{
		"another page count":      {RawSHA256: rec.RawSHA256, RawSize: 15, CompressedSize: rec.CompressedSize, Pages: 3},
		"another raw size":        {RawSHA256: rec.RawSHA256, RawSize: 16, CompressedSize: rec.CompressedSize, Pages: 2},
		"another compressed size": {RawSHA256: rec.RawSHA256, RawSize: 15, CompressedSize: rec.CompressedSize + 1, Pages: 2},
	} {
		if _, err := parsePageIndex(idx, r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	gap := append([]Page(nil), pages...)
	gap[1].Offset = 21
	idx2, _ := appendPageIndex(nil, gap)
	rec.CompressedSize, rec.PageIndexSize = 35+int64(len(idx2)), int64(len(idx2))
	if _, err := parsePageIndex(idx2, rec); err == nil {
		t.Error("frames that do not tile the stream were accepted")
	}
}

func FuzzParsePageIndex(f *testing.F) {
	idx, _ := appendPageIndex(nil, []Page{{RawSize: 1, RawSHA256: strings.Repeat("a", 64), CompressedSize: 9}, {RawSize: 2, RawSHA256: strings.Repeat("b", 64), Offset: 9, CompressedSize: 9}})
	f.Add(idx, 2, int64(3), int64(18+len(idx)))
	f.Fuzz(func(t *testing.T, b []byte, n int, raw, compressed int64) {
		pages, err := parsePageIndex(b, record{RawSize: raw, CompressedSize: compressed, Pages: n})
		if err != nil {
			return
		}
		var off int64
		for _, p := range pages {
			if p.Offset != off || p.CompressedSize <= 0 {
				t.Fatalf("accepted pages that do not tile: %+v", pages)
			}
			off += p.CompressedSize
		}
	})
}
