package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a webhook delivery.
const (
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256, under the
	// sink's key, of the timestamp header's value, a ".", and the body.
	HeaderSignature = "X-Sluice-Signature"
	// HeaderTimestamp is when the delivery was signed, in Unix seconds.
	HeaderTimestamp = "X-Sluice-Timestamp"
	// HeaderIdempotency is the notification's ID: a receiver that saw it
	// already acknowledges and ignores the delivery.
	HeaderIdempotency = "Idempotency-Key"
)

// SchemaVersion is the webhook body's version (its "version" field).
const SchemaVersion = 1

// WebhookBody is the JSON a webhook sink receives.
type WebhookBody struct {
	Version int `json:"version"`
	Notification
}

// Webhook returns the webhook body of a notification.
func Webhook(n Notification) ([]byte, error) {
	b, err := json.Marshal(WebhookBody{Version: SchemaVersion, Notification: n})
	if err != nil {
		return nil, fmt.Errorf("writing the webhook body of %s: %w", n.ID, err)
	}
	return b, nil
}

// Sign returns the signature header's value for a body signed at ts.
func Sign(key []byte, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// ErrBadSignature is returned by Verify for a delivery whose signature
// does not match: a wrong key, or a body or timestamp changed.
var ErrBadSignature = errors.New("webhook signature does not match")

// Verify checks a webhook delivery as a receiver would: the signature
// header against the HMAC of the timestamp and body under key, and the
// timestamp within tolerance of now (a replayed delivery is refused; 0:
// five minutes).
func Verify(key []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = 5 * time.Minute
	}
	tsText := h.Get(HeaderTimestamp)
	secs, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("verifying a webhook: header %s %q is not Unix seconds", HeaderTimestamp, tsText)
	}
	ts := time.Unix(secs, 0)
	if d := now.Sub(ts); d > tolerance || d < -tolerance {
		return fmt.Errorf("verifying a webhook: timestamp %s is more than %s from now", ts.UTC().Format(time.RFC3339), tolerance)
	}
	got := h.Get(HeaderSignature)
	if !strings.HasPrefix(got, "sha256=") {
		return fmt.Errorf("verifying a webhook: %w (header %s has no sha256= prefix)", ErrBadSignature, HeaderSignature)
	}
	want := Sign(key, ts, body)
	if !hmac.Equal([]byte(got), []byte(want)) {
		return fmt.Errorf("verifying a webhook: %w", ErrBadSignature)
	}
	return nil
}

// maxSlackLines bounds the changes a Slack message lists one per line.
const maxSlackLines = 20

// slackBody is a Slack-compatible incoming webhook's body: text (the
// fallback, and all that Mattermost and others read) and blocks.
type slackBody struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type string     `json:"type"`
	Text *slackText `json:"text,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Slack returns the Slack-compatible body of a notification: the title
// and one line per change (at most 20, then a count of the rest). A
// provider's own change (State) is one line for the datasets it covers,
// and only the changes it does not cover are listed.
func Slack(n Notification) ([]byte, error) {
	var lines []string
	changes := n.Changes
	if n.State != "" {
		lines = append(lines, fmt.Sprintf("• all %d watched datasets of %s %s", n.Watched, n.Provider, words[n.State]))
		changes = nil
		for _, c := range n.Changes {
			if !n.Covered(c) {
				changes = append(changes, c)
			}
		}
	}
	for i, c := range changes {
		if i == maxSlackLines {
			lines = append(lines, fmt.Sprintf("…and %d more", len(changes)-i))
			break
		}
		lines = append(lines, "• "+c.Summary)
	}
	list := strings.Join(lines, "\n")
	body := slackBody{
		Text: n.Title + "\n" + list,
		Blocks: []slackBlock{
			{Type: "header", Text: &slackText{Type: "plain_text", Text: clipRunes(n.Title, 150)}},
			{Type: "section", Text: &slackText{Type: "mrkdwn", Text: clipRunes(list, 3000)}},
		},
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("writing the slack body of %s: %w", n.ID, err)
	}
	return b, nil
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
