package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Sender delivers notifications over HTTP.
type Sender struct {
	// Client sends the requests (nil: a client with a 30-second timeout).
	Client *http.Client
	// Now signs deliveries (nil: time.Now).
	Now func() time.Time
}

// StatusError is a receiver's answer other than 2xx.
type StatusError struct {
	Sink   string
	Status int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("sink %s answered HTTP %d", e.Sink, e.Status)
}

// Send delivers n to sink once: a webhook's JSON body signed with its key
// (when it has one), or a Slack body; both carry the notification's ID as
// the Idempotency-Key header. Only a 2xx answer is a delivery. Errors
// never hold the sink's URL nor key.
func (s Sender) Send(ctx context.Context, sink Sink, n Notification) error {
	var body []byte
	var err error
	switch sink.Type {
	case WebhookSink:
		body, err = Webhook(n)
	case SlackSink:
		body, err = Slack(n)
	default:
		return fmt.Errorf("delivering %s to sink %s: unknown sink type %q", n.ID, sink.Name, sink.Type)
	}
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sink.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("delivering %s to sink %s: building the request failed", n.ID, sink.Name)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sluice-notify")
	req.Header.Set(HeaderIdempotency, n.ID)
	if sink.Type == WebhookSink && len(sink.Key) > 0 {
		now := time.Now
		if s.Now != nil {
			now = s.Now
		}
		ts := now()
		req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
		req.Header.Set(HeaderSignature, Sign(sink.Key, ts, body))
	}
	c := s.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may carry a token
		}
		return fmt.Errorf("delivering %s to sink %s: %v", n.ID, sink.Name, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("delivering %s: %w", n.ID, &StatusError{Sink: sink.Name, Status: resp.StatusCode})
	}
	return nil
}
