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
//   - Never partial: a failed or cancelled Put (or Writer abandoned before
//     Commit) leaves no object at the key and never harms the object
//     already there. Objects appear atomically, together with their
//     metadata.
//   - Idempotent: the same key written again replaces the object; when the
//     stored object verifiably holds the same pages (recorded SHA-256 and
//     page count equal, and it decompresses to them: Verify), the write is
//     skipped and Result.Skipped says so. A damaged object is rewritten.
//   - Pages: a provider's answer in several calls is one object, each page
//     one zstd frame, with a page index at the end of the stream (see
//     Page, Writer, Pages, OpenPage).
//   - Self-cleaning: a local lake opened for writing removes the temporary
//     files of killed writers (Local.RemoveStale), and a running writer
//     sweeps them periodically (Local.SweepStale); an S3 lake opened for
//     writing checks the bucket's lifecycle rules (S3.CheckLifecycle).
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
// type, redacted source URL, fetch time and the writing Sluice version, and
// for more than one page the page count and the page index's size. On
// S3 these are user metadata (x-amz-meta-sluice-raw-sha256, -raw-size,
// -compressed-size, -content-type, -source-url, -fetched-at, -version,
// -pages, -page-index-size) and
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
