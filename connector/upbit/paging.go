package upbit

import (
	"fmt"
	"regexp"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// candleCounter counts the objects of a JSON root array as the body
// streams past: the candles of a page. It tracks strings (with escapes)
// and nesting only, so it never buffers.
type candleCounter struct {
	depth      int
	inStr, esc bool
	n          int
}

// Write scans p. It never fails.
func (c *candleCounter) Write(p []byte) (int, error) {
	for _, b := range p {
		if c.inStr {
			switch {
			case c.esc:
				c.esc = false
			case b == '\\':
				c.esc = true
			case b == '"':
				c.inStr = false
			}
			continue
		}
		switch b {
		case '"':
			c.inStr = true
		case '{', '[':
			if b == '{' && c.depth == 1 {
				c.n++
			}
			c.depth++
		case '}', ']':
			c.depth--
		}
	}
	return len(p), nil
}

// candleTime finds candle_date_time_utc values; the last one in a page's
// tail is its oldest candle (candles come newest first).
var candleTime = regexp.MustCompile(`"candle_date_time_utc"\s*:\s*"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})`)

// oldestCandle returns the start of the last candle in tail.
func oldestCandle(tail []byte) (time.Time, bool) {
	all := candleTime.FindAllSubmatch(tail, -1)
	if len(all) == 0 {
		return time.Time{}, false
	}
	t, err := time.Parse("2006-01-02T15:04:05", string(all[len(all)-1][1]))
	return t, err == nil
}

// pages sets the Next of an answer asked with the exclusive to toParam
// and count: a page holding fewer candles than asked is the last (the
// market has no older ones); a full page whose oldest candle starts after
// From's day is followed by the page before that candle.
func pages(b *connector.Base, call permit.Call, req connector.Request, resp *connector.Response, toParam string, count int) {
	counter := &candleCounter{}
	tail := &connector.Tail{}
	watch := connector.Watch(resp, counter, tail)
	fail := func(msg string) error {
		return b.Fail(call, resp.Status, &connector.Error{Class: connector.Transient, Code: "paging", Message: msg})
	}
	resp.Next = func() (connector.Request, bool, error) {
		if !watch.Done() {
			return connector.Request{}, false, connector.Unread()
		}
		if counter.n < count {
			return connector.Request{}, false, nil
		}
		oldest, ok := oldestCandle(tail.Bytes())
		if !ok {
			return connector.Request{}, false, fail("a full page of candles names no candle_date_time_utc at its end")
		}
		if !oldest.After(connector.CivilDate(req.From)) {
			return connector.Request{}, false, nil
		}
		to, err := time.Parse(toLayout, toParam)
		if err == nil && !oldest.Before(to) {
			return connector.Request{}, false, fail(fmt.Sprintf("the cursor does not advance: the oldest candle %s is not before to %s",
				oldest.Format(toLayout), toParam))
		}
		next := req
		next.Page = req.PageOrFirst() + 1
		next.Cursor = oldest.UTC().Format(toLayout)
		return next, true, nil
	}
}
