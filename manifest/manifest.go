// Package manifest keeps backfill manifests: one lake object per dataset
// and backfill that records every chunk the backfill handled — its range,
// the object's key, pages, raw SHA-256 and status (ok, no_data, failed
// with the reason). A manifest is the record of a backfill; the objects in
// the lake are the truth it records, so a chunk whose object landed but
// whose entry was lost (a worker killed between the two writes) is
// recovered from the object's own metadata.
//
// Manifests live under Prefix, outside the provider=…/job=… tree of data
// objects: sink.ParseKey rejects their keys, so the coverage map, the daily
// run's revision comparison and `sluice lake verify --repair` never take
// one for data.
package manifest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/sink"
)

// Prefix is where every manifest lives in the lake.
const Prefix = "manifests/"

// Version is the manifest format version Write records.
const Version = 1

// Chunk statuses.
const (
	StatusOK     = "ok"
	StatusNoData = "no_data"
	StatusFailed = "failed"
)

// Entry is one chunk of a backfill.
type Entry struct {
	From     string `json:"from"` // YYYY-MM-DD, both included
	To       string `json:"to"`
	Key      string `json:"key,omitempty"` // the chunk's object; empty unless ok
	Pages    int    `json:"pages,omitempty"`
	SHA256   string `json:"sha256,omitempty"` // of the raw bytes of every page back to back
	RawBytes int64  `json:"raw_bytes,omitempty"`
	Status   string `json:"status"`
	Error    string `json:"error,omitempty"` // why a failed chunk failed
	// Skipped is true when the backfill made no provider call for the
	// chunk (reprocess missing or failed found it done), or the sink found
	// the refetched bytes unchanged.
	Skipped bool      `json:"skipped,omitempty"`
	Updated time.Time `json:"updated"`
}

// Manifest is one dataset's record of one backfill.
type Manifest struct {
	Version  int       `json:"version"`
	Backfill string    `json:"backfill"`
	Dataset  string    `json:"dataset"`
	Provider string    `json:"provider"`
	Updated  time.Time `json:"updated"`
	Chunks   []Entry   `json:"chunks"` // sorted by From
}

// DatasetPrefix is the prefix of every manifest of a dataset.
func DatasetPrefix(dataset string) string { return Prefix + "job=" + dataset + "/" }

// Key is the lake key of a dataset's manifest of a backfill. A backfill
// id made only of key characters is used as it is; any other is replaced
// by a digest, so every id maps to a valid key.
func Key(dataset, backfill string) (string, error) {
	name := backfill
	if name == "" || strings.HasPrefix(name, ".") || strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.=+", r))
	}) || len(name) > 200 {
		sum := sha256.Sum256([]byte(backfill))
		name = "id-" + hex.EncodeToString(sum[:12])
	}
	key := DatasetPrefix(dataset) + "backfill=" + name + ".json"
	if err := sink.ValidateKey(key); err != nil {
		return "", fmt.Errorf("building the manifest key of dataset %q: %w", dataset, err)
	}
	return key, nil
}

// Merge adds entries to m, replacing an entry of the same range: the
// newest word on a chunk wins.
func (m *Manifest) Merge(entries []Entry) {
	idx := map[[2]string]int{}
	for i, e := range m.Chunks {
		idx[[2]string{e.From, e.To}] = i
	}
	for _, e := range entries {
		k := [2]string{e.From, e.To}
		if i, ok := idx[k]; ok {
			m.Chunks[i] = e
			continue
		}
		idx[k] = len(m.Chunks)
		m.Chunks = append(m.Chunks, e)
	}
	sort.SliceStable(m.Chunks, func(i, j int) bool {
		if m.Chunks[i].From != m.Chunks[j].From {
			return m.Chunks[i].From < m.Chunks[j].From
		}
		return m.Chunks[i].To < m.Chunks[j].To
	})
}

// maxManifestBytes bounds what Read accepts of one manifest.
const maxManifestBytes = 64 << 20

// Read reads the manifest at key; sink.ErrNotFound when there is none.
func Read(ctx context.Context, lake sink.Sink, key string) (*Manifest, error) {
	r, _, err := lake.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading manifest %s: %w", key, err)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("reading manifest %s: larger than %d bytes", key, maxManifestBytes)
	}
	return Decode(key, data)
}

// Decode parses a manifest's bytes; source names it in errors.
func Decode(source string, data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decoding manifest %s: %w", source, err)
	}
	if m.Version != Version {
		return nil, fmt.Errorf("decoding manifest %s: version %d, want %d", source, m.Version, Version)
	}
	if m.Dataset == "" {
		return nil, fmt.Errorf("decoding manifest %s: no dataset", source)
	}
	seen := map[[2]string]bool{}
	for i, e := range m.Chunks {
		if seen[[2]string{e.From, e.To}] {
			return nil, fmt.Errorf("decoding manifest %s: chunks[%d] repeats the range %s..%s", source, i, e.From, e.To)
		}
		seen[[2]string{e.From, e.To}] = true
		if _, err := time.Parse(time.DateOnly, e.From); err != nil {
			return nil, fmt.Errorf("decoding manifest %s: chunks[%d].from %q is not YYYY-MM-DD", source, i, e.From)
		}
		if _, err := time.Parse(time.DateOnly, e.To); err != nil {
			return nil, fmt.Errorf("decoding manifest %s: chunks[%d].to %q is not YYYY-MM-DD", source, i, e.To)
		}
		switch e.Status {
		case StatusOK, StatusNoData, StatusFailed:
		default:
			return nil, fmt.Errorf("decoding manifest %s: chunks[%d].status %q is not ok, no_data or failed", source, i, e.Status)
		}
	}
	return &m, nil
}

// Write stores m at key (one object; the sink replaces the previous
// version atomically, so a reader sees the old manifest or the new one).
func Write(ctx context.Context, lake sink.Sink, key string, m *Manifest) error {
	m.Version = Version
	data, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return fmt.Errorf("encoding manifest %s: %w", key, err)
	}
	if _, err := lake.Put(ctx, key, bytes.NewReader(data), sink.Meta{ContentType: "application/json", FetchedAt: m.Updated}); err != nil {
		return fmt.Errorf("writing manifest %s: %w", key, err)
	}
	return nil
}

// Update merges entries into the manifest at key (creating it) and writes
// it back.
func Update(ctx context.Context, lake sink.Sink, key string, head Manifest, entries []Entry, now time.Time) error {
	m, err := Read(ctx, lake, key)
	if errors.Is(err, sink.ErrNotFound) {
		m, err = &head, nil
	}
	if err != nil {
		return err
	}
	m.Backfill, m.Dataset, m.Provider = head.Backfill, head.Dataset, head.Provider
	m.Merge(entries)
	m.Updated = now.UTC()
	return Write(ctx, lake, key, m)
}

// Dataset reads every manifest of a dataset, oldest update first.
func Dataset(ctx context.Context, lake sink.Sink, dataset string) ([]*Manifest, error) {
	var keys []string
	if err := lake.List(ctx, DatasetPrefix(dataset), func(o sink.Object) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("listing the manifests of %s: %w", dataset, err)
	}
	return readAll(ctx, lake, keys)
}

// All reads every manifest in the lake, oldest update first.
func All(ctx context.Context, lake sink.Sink) ([]*Manifest, error) {
	var keys []string
	if err := lake.List(ctx, Prefix, func(o sink.Object) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("listing manifests: %w", err)
	}
	return readAll(ctx, lake, keys)
}

func readAll(ctx context.Context, lake sink.Sink, keys []string) ([]*Manifest, error) {
	var out []*Manifest
	for _, k := range keys {
		m, err := Read(ctx, lake, k)
		if errors.Is(err, sink.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Updated.Before(out[j].Updated) })
	return out, nil
}

// Latest is the newest entry of every range across manifests (as Dataset
// returns them, oldest first), by [from, to].
func Latest(ms []*Manifest) map[[2]string]Entry {
	out := map[[2]string]Entry{}
	for _, m := range ms {
		for _, e := range m.Chunks {
			k := [2]string{e.From, e.To}
			if old, ok := out[k]; !ok || !e.Updated.Before(old.Updated) {
				out[k] = e
			}
		}
	}
	return out
}

// IsKey reports whether key is a manifest's key.
func IsKey(key string) bool { return strings.HasPrefix(key, Prefix) }
