package connector

import (
	"errors"
	"fmt"
	"io"
)

// MaxProbeBytes bounds what a probe keeps of an answer: enough for every
// probe window (one row, a candle, fourteen days of a chart) many times
// over, and small enough that a provider answering a probe with a huge body
// costs no memory. What lies beyond is not read.
const MaxProbeBytes = 1 << 20

// ProbeAnswer is what a successful probe brought back: enough for the watch
// to fingerprint the answer's shape and read its newest period, never the
// whole of a large answer.
type ProbeAnswer struct {
	// Status is the HTTP status of the answer.
	Status int
	// ContentType is the Content-Type the provider sent.
	ContentType string
	// Ext is "json" or "xml" (Response.Ext).
	Ext string
	// Body holds the answer's first MaxProbeBytes bytes, exactly as sent.
	Body []byte
	// Truncated reports that the answer was longer than MaxProbeBytes:
	// Body is its beginning only (its shape and rows cannot be read).
	Truncated bool
	// Newest reports that the answer holds the dataset's most recent rows
	// (the probe window ends today and the answer is not cut short: FRED's
	// newest observation, UPBIT's current candle, a KIS chart newest first,
	// every row of ECOS's window), so the newest period among them is the
	// newest the provider publishes. False when the probe asks a single past
	// day or one row of unknown order (data.go.kr): the watch then does not
	// judge lateness from probes.
	Newest bool
}

// ReadProbe reads a probe's answer, at most MaxProbeBytes of it, and
// closes it; err, when not nil, is returned as it is (the classified
// failure of the probe). newest is the connector's ProbeAnswer.Newest for
// a complete answer. A read failure comes back classified (Transient).
func ReadProbe(resp *Response, err error, newest bool) (ProbeAnswer, error) {
	if err != nil {
		return ProbeAnswer{}, err
	}
	if resp == nil || resp.Body == nil {
		return ProbeAnswer{}, errors.New("probe: no answer")
	}
	ans := ProbeAnswer{Status: resp.Status, ContentType: resp.ContentType, Ext: resp.Ext}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, MaxProbeBytes+1))
	cerr := resp.Body.Close()
	if rerr != nil {
		return ProbeAnswer{}, rerr
	}
	if len(body) > MaxProbeBytes {
		body, ans.Truncated = body[:MaxProbeBytes], true
	} else if cerr != nil {
		return ProbeAnswer{}, fmt.Errorf("closing response body: %w", cerr)
	}
	ans.Body = body
	ans.Newest = newest && !ans.Truncated
	return ans, nil
}
