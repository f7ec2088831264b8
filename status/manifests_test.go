package status

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/manifest"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
)

// TestLakeManifestsChunks: the newest entry of each range wins across
// backfills; failed and no-data chunks are reported, ok ones are not; the
// lake scan takes no manifest for a foreign key.
func TestLakeManifestsChunks(t *testing.T) {
	ctx := context.Background()
	lake, err := sink.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	write := func(backfill string, at time.Time, entries ...manifest.Entry) {
		key, err := manifest.Key("fred-dgs2", backfill)
		if err != nil {
			t.Fatal(err)
		}
		if err := manifest.Update(ctx, lake, key, manifest.Manifest{Backfill: backfill, Dataset: "fred-dgs2", Provider: "fred"}, entries, at); err != nil {
			t.Fatal(err)
		}
	}
	write("bf-1", t0,
		manifest.Entry{From: "2019-01-01", To: "2019-12-31", Status: manifest.StatusFailed, Error: "boom", Updated: t0},
		manifest.Entry{From: "2020-01-01", To: "2020-12-31", Status: manifest.StatusNoData, Updated: t0},
		manifest.Entry{From: "2021-01-01", To: "2021-12-31", Status: manifest.StatusFailed, Updated: t0})
	t1 := t0.Add(time.Hour)
	write("bf-2", t1, manifest.Entry{From: "2021-01-01", To: "2021-12-31", Status: manifest.StatusOK, Key: "k", Updated: t1})

	got, err := LakeManifests{Lake: lake}.Chunks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []ChunkStatus{
		{Dataset: "fred-dgs2", From: date(2019, 1, 1), To: date(2019, 12, 31), Status: ChunkFailed},
		{Dataset: "fred-dgs2", From: date(2020, 1, 1), To: date(2020, 12, 31), Status: ChunkNoData},
	}
	if len(got) != len(want) {
		t.Fatalf("chunks = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Dataset != want[i].Dataset || !got[i].From.Equal(want[i].From) || !got[i].To.Equal(want[i].To) || got[i].Status != want[i].Status {
			t.Errorf("chunk %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := ScanLake(ctx, lake, reg, t1)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Foreign != 0 || ix.Objects != 0 {
		t.Errorf("scan of a lake holding only manifests: %d objects, %d foreign", ix.Objects, ix.Foreign)
	}
}
