package connector

import (
	"errors"
	"io"
)

// TailSize is how many bytes at the end of a page a connector keeps to
// find what a provider says after the rows (data.go.kr totalCount, UPBIT's
// oldest candle): enough for every provider's closing envelope.
const TailSize = 4096

// ErrPageUnread is wrapped by the error of a Response.Next called before
// the page's body was read to its end.
var ErrPageUnread = errors.New("the page's body was not read to its end")

// Watch wraps resp.Body so that every byte the caller reads also goes to
// each of ws (a Tail, a connector's own scanner), and returns the watch,
// which reports when the body was read to its end. Writers must not fail;
// their errors are ignored.
func Watch(resp *Response, ws ...io.Writer) *BodyWatch {
	w := &BodyWatch{rc: resp.Body, ws: ws}
	resp.Body = w
	return w
}

// BodyWatch is a response body that shows what it yields to watchers.
type BodyWatch struct {
	rc   io.ReadCloser
	ws   []io.Writer
	head []byte
	eof  bool
	read int64
}

// Read reads the body and hands what it read to the watchers.
func (b *BodyWatch) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		if len(b.head) < HeadSize {
			b.head = append(b.head, p[:min(n, HeadSize-len(b.head))]...)
		}
		b.read += int64(n)
		for _, w := range b.ws {
			_, _ = w.Write(p[:n])
		}
	}
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// Close closes the body.
func (b *BodyWatch) Close() error { return b.rc.Close() }

// Done reports whether the body was read to io.EOF.
func (b *BodyWatch) Done() bool { return b.eof }

// Head returns the first HeadSize bytes read (or all, when shorter).
func (b *BodyWatch) Head() []byte { return b.head }

// Len is the number of bytes read so far.
func (b *BodyWatch) Len() int64 { return b.read }

// unread is the error of a Next called too early: a caller's bug.
func unread() *Error {
	return &Error{Class: BadRequest, Message: "asking for the next page: " + ErrPageUnread.Error(), Err: ErrPageUnread}
}

// Unread returns the classified error of a Response.Next called before
// the body was read to its end, for connectors' own Next functions.
func Unread() error { return unread() }

// Tail keeps the last TailSize bytes written to it.
type Tail struct {
	buf []byte
}

// Write keeps the end of what was written. It never fails.
func (t *Tail) Write(p []byte) (int, error) {
	n := len(p)
	if n >= TailSize {
		t.buf = append(t.buf[:0], p[n-TailSize:]...)
		return n, nil
	}
	if over := len(t.buf) + n - TailSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// Bytes returns the kept bytes; the slice is valid until the next Write.
func (t *Tail) Bytes() []byte { return t.buf }

// NextByPage returns a Response.Next for providers that page by number
// (ECOS rows, FRED offset, KIS tr_cont continuation): the same request
// with Page + 1 when more is true, else the end. It fails when called
// before the body was read to its end.
func NextByPage(req Request, watch *BodyWatch, more func() (bool, error)) func() (Request, bool, error) {
	return func() (Request, bool, error) {
		if watch != nil && !watch.Done() {
			return Request{}, false, unread()
		}
		ok, err := more()
		if err != nil || !ok {
			return Request{}, false, err
		}
		next := req
		next.Page = req.PageOrFirst() + 1
		return next, true, nil
	}
}
