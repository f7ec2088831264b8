package sink

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The local lake stores an object's metadata inside the object file, as a
// zstd skippable frame after the compressed data:
//
//	[zstd frame(s)] [magic 0x184D2A5C][frame size u32][JSON][JSON length u32]["SLMD"]
//
// Every zstd decoder (the zstd CLI included) skips that frame, so the file is
// still a plain .zst file, and the object and its metadata appear together
// in one rename: an object can never exist without its metadata. Readers
// find the trailer from the end of the file through the last eight bytes.
const (
	trailerMagic   = 0x184D2A5C // a zstd skippable-frame magic (0x184D2A5?)
	trailerMark    = "SLMD"
	trailerFooter  = 8                                 // JSON length + mark
	trailerHeader  = 8                                 // skippable magic + frame size
	maxTrailerJSON = 64 << 10                          // far above any real record
	minTrailerLen  = trailerHeader + trailerFooter + 2 // "{}"
)

// appendTrailer appends the metadata frame for rec to dst.
func appendTrailer(dst []byte, rec record) ([]byte, error) {
	js, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encoding metadata: %w", err)
	}
	if len(js) > maxTrailerJSON {
		return nil, fmt.Errorf("encoding metadata: %d bytes is over the %d-byte limit", len(js), maxTrailerJSON)
	}
	dst = binary.LittleEndian.AppendUint32(dst, trailerMagic)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(js)+trailerFooter))
	dst = append(dst, js...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(js)))
	return append(dst, trailerMark...), nil
}

// errNoTrailer means the file has no valid Sluice metadata frame at its
// end; the object is then listed without metadata.
var errNoTrailer = errors.New("no sluice metadata trailer")

// readTrailer reads the metadata frame at the end of a file of the given
// size. It returns the record and the trailer's length in bytes, or an
// error wrapping errNoTrailer when there is none.
func readTrailer(r io.ReaderAt, size int64) (record, int64, error) {
	if size < minTrailerLen {
		return record{}, 0, errNoTrailer
	}
	var foot [trailerFooter]byte
	if _, err := r.ReadAt(foot[:], size-trailerFooter); err != nil {
		return record{}, 0, fmt.Errorf("reading metadata trailer: %w", err)
	}
	if string(foot[4:]) != trailerMark {
		return record{}, 0, errNoTrailer
	}
	n := int64(binary.LittleEndian.Uint32(foot[:4]))
	total := trailerHeader + n + trailerFooter
	if n < 2 || n > maxTrailerJSON || total > size {
		return record{}, 0, fmt.Errorf("%w: bad length %d", errNoTrailer, n)
	}
	buf := make([]byte, trailerHeader+n)
	if _, err := r.ReadAt(buf, size-total); err != nil {
		return record{}, 0, fmt.Errorf("reading metadata trailer: %w", err)
	}
	if binary.LittleEndian.Uint32(buf[:4]) != trailerMagic ||
		int64(binary.LittleEndian.Uint32(buf[4:8])) != n+trailerFooter {
		return record{}, 0, fmt.Errorf("%w: bad frame header", errNoTrailer)
	}
	var rec record
	if err := json.Unmarshal(buf[trailerHeader:], &rec); err != nil {
		return record{}, 0, fmt.Errorf("%w: %v", errNoTrailer, err)
	}
	if err := rec.validate(); err != nil {
		return record{}, 0, fmt.Errorf("%w: %v", errNoTrailer, err)
	}
	return rec, total, nil
}
