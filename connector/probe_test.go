package connector

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

func TestReadProbeBoundsTheAnswer(t *testing.T) {
	small := &closeCounter{Reader: strings.NewReader(`{"a":1}`)}
	ans, err := ReadProbe(&Response{Body: small, Status: 200, ContentType: "application/json", Ext: "json"}, nil, true)
	if err != nil || string(ans.Body) != `{"a":1}` || !ans.Newest || ans.Truncated || ans.Status != 200 || ans.Ext != "json" || small.closed != 1 {
		t.Fatalf("small answer: %+v, %v, closed %d", ans, err, small.closed)
	}

	// An answer longer than the bound is cut, not read to its end, and no
	// longer claims to hold the newest rows.
	huge := &closeCounter{Reader: io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("x"), MaxProbeBytes)), strings.NewReader("tail"), neverEnding{})}
	ans, err = ReadProbe(&Response{Body: huge, Status: 200}, nil, true)
	if err != nil || len(ans.Body) != MaxProbeBytes || !ans.Truncated || ans.Newest || huge.closed != 1 {
		t.Fatalf("huge answer: %d bytes, truncated %v, newest %v, %v, closed %d", len(ans.Body), ans.Truncated, ans.Newest, err, huge.closed)
	}

	// A failed probe's error comes back as it is.
	want := &Error{Class: NoData, Provider: "fred"}
	if _, err := ReadProbe(nil, want, true); err != want {
		t.Errorf("error: %v", err)
	}
	// A read failure is returned.
	broken := &closeCounter{Reader: io.MultiReader(strings.NewReader("{"), failing{})}
	if _, err := ReadProbe(&Response{Body: broken}, nil, true); err == nil || broken.closed != 1 {
		t.Errorf("read failure: %v, closed %d", err, broken.closed)
	}
}

type neverEnding struct{}

func (neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'y'
	}
	return len(p), nil
}

type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
