package sink

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/google/uuid"
)

// firstBufferSize is where a part buffer starts before it has to grow:
// most bronze objects are a few KiB compressed.
const firstBufferSize = 32 << 10

// upload is the io.Writer the encoder writes compressed bytes to on the S3
// path. It fills a part buffer; the first time a full part is followed by
// more bytes, it starts a multipart upload to a staging key, and from then
// on hands every full part to an uploading goroutine. At most concurrency
// parts are in flight and one more is filling, so at most
// partSize × (concurrency+1) bytes are held: the encoder blocks when all
// upload slots are busy. If the body ends within the first part, nothing
// has been sent and Put writes buf with one PutObject.
//
// Write is called by one goroutine at a time (the encoder's); the part
// goroutines share only the fields under mu.
type upload struct {
	s      *S3
	ctx    context.Context // cancelled with the first failure
	cancel context.CancelCauseFunc
	key    string

	buf     []byte // the part being filled
	total   int64  // compressed bytes written so far
	staging string
	id      *string // multipart upload id; nil until the first part goes
	next    int32   // next part number
	slots   chan struct{}
	wg      sync.WaitGroup

	mu    sync.Mutex
	err   error // first part failure
	parts []types.CompletedPart
	free  [][]byte // buffers of finished parts, for reuse
	held  int64    // bytes in all buffers held (filling, in flight, free)
	peak  int64    // high-water mark of held
	sent  int64    // bytes acknowledged by the server
}

func newUpload(ctx context.Context, s *S3, key string) *upload {
	ctx, cancel := context.WithCancelCause(ctx)
	return &upload{
		s:      s,
		ctx:    ctx,
		cancel: cancel,
		key:    key,
		next:   1,
		slots:  make(chan struct{}, s.concurrency),
	}
}

// Write implements io.Writer.
func (u *upload) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if err := u.failure(); err != nil {
			return n, err
		}
		if int64(len(u.buf)) == u.s.partSize {
			if err := u.flush(); err != nil {
				return n, err
			}
		}
		c := min(int64(len(p)), u.s.partSize-int64(len(u.buf)))
		u.reserve(int(c))
		u.buf = append(u.buf, p[:c]...)
		u.total += c
		n += int(c)
		p = p[c:]
	}
	return n, nil
}

// reserve makes room for n more bytes in buf, growing it (never beyond the
// part size) and accounting for what it allocates.
func (u *upload) reserve(n int) {
	need := len(u.buf) + n
	if need <= cap(u.buf) {
		return
	}
	size := max(2*cap(u.buf), need, firstBufferSize)
	if u.id != nil {
		size = int(u.s.partSize) // multipart: every part will be full
	}
	size = min(size, int(u.s.partSize))
	grown := make([]byte, len(u.buf), size)
	copy(grown, u.buf)
	u.account(int64(size - cap(u.buf)))
	u.buf = grown
}

func (u *upload) account(delta int64) {
	u.mu.Lock()
	u.held += delta
	u.peak = max(u.peak, u.held)
	u.mu.Unlock()
}

func (u *upload) failure() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

func (u *upload) fail(err error) {
	u.mu.Lock()
	if u.err == nil {
		u.err = err
	}
	u.mu.Unlock()
	u.cancel(err)
}

// started reports whether a multipart upload was begun.
func (u *upload) started() bool { return u.id != nil }

func (u *upload) sentBytes() int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sent
}

func (u *upload) peakBytes() int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.peak
}

// flush hands the filled buffer to an uploading goroutine, starting the
// multipart upload first if needed, and takes a free buffer (or none: the
// next Write allocates) to fill next.
func (u *upload) flush() error {
	if u.id == nil {
		u.staging = reservedPrefix + "staging/" + uuid.NewString()
		out, err := u.s.client.CreateMultipartUpload(u.ctx, &s3.CreateMultipartUploadInput{
			Bucket:            &u.s.bucket,
			Key:               &u.staging,
			ContentType:       aws.String(storedContentType),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
		if err != nil {
			err = fmt.Errorf("starting multipart upload: %w", err)
			u.fail(err)
			return err
		}
		u.id = out.UploadId
	}
	select {
	case u.slots <- struct{}{}:
	case <-u.ctx.Done():
		return context.Cause(u.ctx)
	}
	part, num := u.buf, u.next
	u.next++
	u.mu.Lock()
	if n := len(u.free); n > 0 {
		u.buf, u.free = u.free[n-1], u.free[:n-1]
	} else {
		u.buf = nil
	}
	u.mu.Unlock()
	u.wg.Add(1)
	go u.send(part, num)
	return nil
}

// send uploads one part and returns its buffer to the free list.
func (u *upload) send(part []byte, num int32) {
	defer u.wg.Done()
	defer func() { <-u.slots }()
	out, err := u.s.client.UploadPart(u.ctx, &s3.UploadPartInput{
		Bucket:            &u.s.bucket,
		Key:               &u.staging,
		UploadId:          u.id,
		PartNumber:        aws.Int32(num),
		Body:              bytes.NewReader(part),
		ContentLength:     aws.Int64(int64(len(part))),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	if err != nil {
		u.fail(fmt.Errorf("uploading part %d: %w", num, err))
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.free = append(u.free, part[:0])
	if err == nil {
		u.sent += int64(len(part))
		u.parts = append(u.parts, types.CompletedPart{
			PartNumber:        aws.Int32(num),
			ETag:              out.ETag,
			ChecksumCRC32:     out.ChecksumCRC32,
			ChecksumCRC32C:    out.ChecksumCRC32C,
			ChecksumCRC64NVME: out.ChecksumCRC64NVME,
			ChecksumSHA1:      out.ChecksumSHA1,
			ChecksumSHA256:    out.ChecksumSHA256,
		})
	}
}

// flushLast sends the final (possibly short) part and waits for every
// part to be acknowledged.
func (u *upload) flushLast() error {
	if len(u.buf) > 0 {
		if err := u.flush(); err != nil {
			u.wg.Wait()
			return err
		}
	}
	u.wg.Wait()
	return u.failure()
}

// complete assembles the staged object from its parts.
func (u *upload) complete() error {
	u.mu.Lock()
	parts := append([]types.CompletedPart(nil), u.parts...)
	u.mu.Unlock()
	sort.Slice(parts, func(i, j int) bool { return *parts[i].PartNumber < *parts[j].PartNumber })
	_, err := u.s.client.CompleteMultipartUpload(u.ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          &u.s.bucket,
		Key:             &u.staging,
		UploadId:        u.id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		return fmt.Errorf("completing multipart upload: %w", err)
	}
	return nil
}

// abort stops the parts in flight and aborts the multipart upload, so the
// server keeps none of its parts.
func (u *upload) abort() {
	if u.id == nil {
		return
	}
	u.cancel(context.Canceled)
	u.wg.Wait()
	u.s.abortUpload(u.ctx, u.staging, u.id)
}
