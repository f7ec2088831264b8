// Package sink is Sluice's bronze lake: it streams raw provider responses
// through a zstd encoder into an object store under deterministic keys.
//
// A Sink has two implementations, S3 (any S3-compatible server: AWS, MinIO,
// versitygw) and Local (a directory, the default for `make run`). Both keep
// the same promises, checked by one conformance suite:
//
//   - Streaming: the body is read once, hashed (SHA-256) and compressed
//     (zstd level 3, SpeedDefault, one encoder goroutine per stream) on the
//     fly; it is never held whole in memory. The S3 sink buffers at most
//     PartSize × (Concurrency+1) compressed bytes per object: Concurrency
//     parts uploading and one filling. Result.PeakBuffered reports what a
//     Put actually held.
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
//	provider=<provider>/job=<dataset>/year=<YYYY>/<dataset>_<YYYYMMDD>-<YYYYMMDD>.<ext>.zst
//
// where the dates are the logical dates of the data, never the wall clock;
// ValidateKey guards every other entry point against keys that could
// escape the lake.
//
// Every object records its raw SHA-256, raw size, compressed size, content
// type, redacted source URL, fetch time and the writing Sluice version. On
// S3 these are user metadata (x-amz-meta-sluice-raw-sha256, -raw-size,
// -compressed-size, -content-type, -source-url, -fetched-at, -version) and
// the object's own Content-Type is application/zstd. In the local lake
// they are a JSON zstd skippable frame at the end of the object file, so
// the file stays a plain .zst file (`zstd -d` reads it) and one rename
// publishes data and metadata together.
//
// Config binds the flags every writing command shares (--s3-bucket,
// --s3-endpoint, --s3-region, --s3-part-size, --s3-concurrency,
// --data-dir, defaulting from SLUICE_S3_BUCKET and friends) and opens the
// lake they select.
package sink
