package manifest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sink"
)

// TestUpdateMergesAndReads: entries merge by range (the newest wins), the
// manifest round-trips through the lake, and its key is never a data key.
func TestUpdateMergesAndReads(t *testing.T) {
	ctx := context.Background()
	lake, err := sink.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key, err := Key("fred-dgs2", "backfill-2016-01-01-2026-08-31-abcd")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.ParseKey(key); err == nil || !IsKey(key) {
		t.Fatalf("manifest key %s parses as a data key", key)
	}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	head := Manifest{Backfill: "b", Dataset: "fred-dgs2", Provider: "fred"}
	if err := Update(ctx, lake, key, head, []Entry{
		{From: "2017-01-01", To: "2017-12-31", Status: StatusFailed, Error: "boom", Updated: t0},
		{From: "2016-01-01", To: "2016-12-31", Status: StatusOK, Key: "k1", Pages: 2, SHA256: "ab", Updated: t0},
	}, t0); err != nil {
		t.Fatal(err)
	}
	if err := Update(ctx, lake, key, head, []Entry{{From: "2017-01-01", To: "2017-12-31", Status: StatusOK, Key: "k2", Updated: t0.Add(time.Hour)}}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	m, err := Read(ctx, lake, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Chunks) != 2 || m.Chunks[0].From != "2016-01-01" || m.Chunks[1].Status != StatusOK || m.Chunks[1].Key != "k2" || m.Chunks[0].Pages != 2 {
		t.Fatalf("manifest = %+v", m.Chunks)
	}
	if err := lake.Verify(ctx, key); err != nil {
		t.Fatalf("lake verify of a manifest: %v", err)
	}
	all, err := Dataset(ctx, lake, "fred-dgs2")
	if err != nil || len(all) != 1 {
		t.Fatalf("Dataset = %v, %v", all, err)
	}
}

// TestKeyOfAnyID: an id with characters no key may hold gets a digest.
func TestKeyOfAnyID(t *testing.T) {
	for _, id := range []string{"a b/c", "", ".hidden", strings.Repeat("x", 300), "ünï"} {
		k, err := Key("ds", id)
		if err != nil || sink.ValidateKey(k) != nil || !strings.Contains(k, "backfill=id-") {
			t.Errorf("Key(%q) = %q, %v", id, k, err)
		}
	}
	if a, _ := Key("ds", "x y"); a == func() string { b, _ := Key("ds", "x z"); return b }() {
		t.Error("two ids share a key")
	}
}

// TestDecodeNamesBadFields: a bad field is named with its value.
func TestDecodeNamesBadFields(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"version":2,"dataset":"d"}`, "version 2"},
		{`{"version":1}`, "no dataset"},
		{`{"version":1,"dataset":"d","chunks":[{"from":"2016","to":"2016-12-31","status":"ok"}]}`, `chunks[0].from "2016"`},
		{`{"version":1,"dataset":"d","chunks":[{"from":"2016-01-01","to":"2016-12-31","status":"maybe"}]}`, `chunks[0].status "maybe"`},
		{`{`, "decoding manifest m.json"},
		{`{"version":1,"dataset":"d","chunks":[{"from":"2016-01-01","to":"2016-12-31","status":"ok"},{"from":"2016-01-01","to":"2016-12-31","status":"failed"}]}`, "chunks[1] repeats"},
	} {
		if _, err := Decode("m.json", []byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.doc, err, tc.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":1,"dataset":"d","chunks":[{"from":"2016-01-01","to":"2016-12-31","status":"ok"}]}`))
	f.Add([]byte(`{"version":1,"dataset":"d","chunks":[{"from":"2016-02-30","to":"x","status":"failed"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode("fuzz", data)
		if err != nil {
			return
		}
		if m.Dataset == "" || m.Version != Version {
			t.Fatalf("accepted %+v", m)
		}
		m.Merge(m.Chunks) // never panics, keeps ranges unique
		seen := map[[2]string]bool{}
		for _, e := range m.Chunks {
			k := [2]string{e.From, e.To}
			if seen[k] {
				t.Fatalf("range %v twice after Merge", k)
			}
			seen[k] = true
		}
	})
}
