// Package sink is Sluice's bronze lake: it streams raw provider responses
// through a zstd encoder into an object store under deterministic keys.
//
// A Sink has two implementations, S3 (any S3-compatible server: AWS, MinIO,
// versitygw) and Local (a directory, the default for `make run`). Both keep
// the same promises:
//
//   - Streaming: the body is read once, hashed (SHA-256) and compressed
//     (zstd level 3) on the fly; it is never held whole in memory. The S3
//     sink buffers at most PartSize × (Concurrency+1) compressed bytes per
//     object, which Result.PeakBuffered reports.
//   - Never partial: a failed or cancelled Put leaves no object at the key
//     and never harms the object already there. Objects appear atomically,
//     together with their metadata.
//   - Idempotent: the same key written again replaces the object; when the
//     raw bytes are unchanged (same SHA-256 as recorded), the write is
//     skipped and Result.Skipped says so.
//
// Keys are built by Key alone:
//
//	provider=<provider>/job=<dataset>/year=<YYYY>/<dataset>_<YYYYMMDD>.<ext>.zst
//
// where the date is the logical date of the data, never the wall clock.
package sink
