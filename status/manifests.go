package status

import (
	"context"
	"sort"
	"time"

	"github.com/sluicehq/sluice/manifest"
	"github.com/sluicehq/sluice/sink"
)

// LakeManifests reads the backfill manifests in a lake (package manifest)
// for the coverage map: the newest entry of each dataset's range, when it
// records a failed or no-data chunk.
type LakeManifests struct {
	Lake sink.Sink
}

// Chunks returns every failed and no-data chunk the newest manifest
// entries record, by dataset and date.
func (m LakeManifests) Chunks(ctx context.Context) ([]ChunkStatus, error) {
	ms, err := manifest.All(ctx, m.Lake)
	if err != nil {
		return nil, err
	}
	byDataset := map[string][]*manifest.Manifest{}
	for _, mf := range ms {
		byDataset[mf.Dataset] = append(byDataset[mf.Dataset], mf)
	}
	var out []ChunkStatus
	for ds, list := range byDataset {
		for k, e := range manifest.Latest(list) {
			var status string
			switch e.Status {
			case manifest.StatusFailed:
				status = ChunkFailed
			case manifest.StatusNoData:
				status = ChunkNoData
			default:
				continue
			}
			from, err1 := time.Parse(time.DateOnly, k[0])
			to, err2 := time.Parse(time.DateOnly, k[1])
			if err1 != nil || err2 != nil {
				continue
			}
			out = append(out, ChunkStatus{Dataset: ds, From: from, To: to, Status: status})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Dataset != out[j].Dataset {
			return out[i].Dataset < out[j].Dataset
		}
		return out[i].From.Before(out[j].From)
	})
	return out, nil
}
