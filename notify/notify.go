// Package notify turns the watch's confirmed Changes into notifications
// for people (docs/notifications.md): which changes are worth telling
// (a dataset down, back up, degraded, late, caught up, its answer's shape
// changed, a daily quota exhausted — never our own throttling nor a provider's
// rate-limit answer), how they are grouped (one message per provider and
// batch: a provider whose 100 datasets go down together is one message),
// which maintenance windows silence them, and how a notification is
// written and signed for its sinks: a generic webhook (JSON body,
// HMAC-SHA256 signature, an idempotency key) and a Slack-compatible
// incoming webhook.
//
// Everything here but Sender is pure and deterministic, so that the
// notifier workflow (workflows.Notifier) can call it.
package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/watch"
)

// Kind says what a notified change is.
type Kind string

// The kinds of notified change.
const (
	// Down: a dataset's confirmed state became down.
	Down Kind = "down"
	// Up: a dataset confirmed down answers again, or one confirmed
	// degraded answers in time again (a recovery).
	Up Kind = "up"
	// Degraded: a dataset confirmed up answers slowly, confirmed by
	// consecutive slow answers (watch.ChangeDegraded).
	Degraded Kind = "degraded"
	// Late: a dataset's newest period is older than its cycle allows.
	Late Kind = "late"
	// CaughtUp: a late dataset's data is due again.
	CaughtUp Kind = "caught_up"
	// Shape: a dataset's answer changed shape (fields added, removed,
	// retyped).
	Shape Kind = "shape"
	// QuotaExhausted: a provider's daily quota is spent; calls wait for
	// its reset.
	QuotaExhausted Kind = "quota_exhausted"
)

// kindOrder is the order kinds are counted in a title.
var kindOrder = []Kind{Down, Degraded, Up, Late, CaughtUp, Shape, QuotaExhausted}

// Change is one change worth a notification.
type Change struct {
	// Key identifies the change, stably: the same change seen twice (a
	// retried activity, a signal sent again) has the same key.
	Key      string    `json:"key"`
	At       time.Time `json:"at"`
	Provider string    `json:"provider"`
	Dataset  string    `json:"dataset,omitempty"`
	Kind     Kind      `json:"kind"`
	From     string    `json:"from,omitempty"`
	To       string    `json:"to,omitempty"`
	Summary  string    `json:"summary"`
}

// key returns the stable key of a change's content.
func key(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:12])
}

// FromWatch returns the notified change for a watch Change of a dataset
// of provider, and false for one nobody is told about: a revision, and a
// dataset's first confirmed state (unknown → up is no recovery). A
// confirmed slowness (watch.ChangeDegraded) is Degraded, and its end Up. A
// throttled or rate-limited probe never makes a watch Change, so it is
// never notified.
func FromWatch(provider string, c watch.Change) (Change, bool) {
	c = c.Normalize()
	n := Change{At: c.At, Provider: provider, Dataset: c.Dataset, From: c.From, To: c.To, Summary: c.Summary}
	switch c.Kind {
	case watch.ChangeState:
		switch {
		case c.To == string(watch.Down):
			n.Kind = Down
		case c.To == string(watch.Up) && c.From == string(watch.Down):
			n.Kind = Up
		default:
			return Change{}, false
		}
	case watch.ChangeDegraded:
		switch {
		case c.To == string(watch.Degraded):
			n.Kind = Degraded
		case c.To == string(watch.Up) && c.From == string(watch.Degraded):
			n.Kind = Up
		default:
			return Change{}, false
		}
	case watch.ChangeLate:
		n.Kind = Late
	case watch.ChangeCaughtUp:
		n.Kind = CaughtUp
	case watch.ChangeShape:
		n.Kind = Shape
	default:
		return Change{}, false
	}
	n.Key = key(string(n.Kind), n.Dataset, strconv.FormatInt(n.At.UnixMicro(), 10), n.From, n.To)
	return n, true
}

// QuotaEventKind is the operational event kind (events.KindQuotaExhausted)
// FromEvent notifies.
const QuotaEventKind = "quota.exhausted"

// FromEvent returns the notified change for an operational event: only a
// daily quota exhausted is one (Sluice's limiter backing off, a probe
// held back, a token refreshed are operations nobody is paged for).
func FromEvent(e watch.Event) (Change, bool) {
	if e.Kind != QuotaEventKind {
		return Change{}, false
	}
	e = e.Normalize()
	n := Change{At: e.At, Provider: e.Provider, Dataset: e.Dataset, Kind: QuotaExhausted, To: e.Scope, Summary: e.Message}
	if n.Summary == "" {
		n.Summary = "daily quota of " + e.Scope + " exhausted"
	}
	// One notification per scope and day: the limiter reports every
	// call it holds back.
	n.Key = key(string(n.Kind), e.Provider, e.Scope, e.At.UTC().Format(time.DateOnly))
	return n, true
}

// Notification is one message: the changes of one provider in one batch.
type Notification struct {
	// ID is the idempotency key: a stable id of the group of changes
	// (their keys, sorted), the same on every delivery attempt.
	ID       string    `json:"id"`
	Provider string    `json:"provider"`
	Title    string    `json:"title"`
	At       time.Time `json:"at"` // the latest change's time
	Changes  []Change  `json:"changes"`
}

// Group returns one notification per provider for a batch of changes,
// sorted by provider, each with its changes in time order; a change whose
// key came earlier in the batch is dropped.
func Group(changes []Change) []Notification {
	seen := make(map[string]bool, len(changes))
	byProvider := map[string][]Change{}
	var providers []string
	for _, c := range changes {
		if seen[c.Key] {
			continue
		}
		seen[c.Key] = true
		if _, ok := byProvider[c.Provider]; !ok {
			providers = append(providers, c.Provider)
		}
		byProvider[c.Provider] = append(byProvider[c.Provider], c)
	}
	sort.Strings(providers)
	out := make([]Notification, 0, len(providers))
	for _, p := range providers {
		cs := byProvider[p]
		sort.SliceStable(cs, func(i, j int) bool {
			if !cs[i].At.Equal(cs[j].At) {
				return cs[i].At.Before(cs[j].At)
			}
			if cs[i].Dataset != cs[j].Dataset {
				return cs[i].Dataset < cs[j].Dataset
			}
			return cs[i].Key < cs[j].Key
		})
		keys := make([]string, len(cs))
		for i, c := range cs {
			keys[i] = c.Key
		}
		sort.Strings(keys)
		out = append(out, Notification{
			ID: "sluice-" + key(keys...), Provider: p, Title: title(p, cs), At: cs[len(cs)-1].At, Changes: cs,
		})
	}
	return out
}

// title says a group's changes in a line: "kis: kis.stock down" for one,
// "kis: 100 datasets down" for many of a kind, "kis: 2 down, 1 late"
// for a mix.
func title(provider string, cs []Change) string {
	if len(cs) == 1 {
		c := cs[0]
		what := c.Dataset
		if what == "" {
			what = c.To
		}
		return fmt.Sprintf("%s: %s %s", provider, what, words[c.Kind])
	}
	counts := map[Kind]int{}
	for _, c := range cs {
		counts[c.Kind]++
	}
	var parts []string
	for _, k := range kindOrder {
		if n := counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, words[k]))
		}
	}
	if len(parts) == 1 {
		for _, k := range kindOrder {
			if n := counts[k]; n > 0 {
				return fmt.Sprintf("%s: %d datasets %s", provider, n, words[k])
			}
		}
	}
	return provider + ": " + strings.Join(parts, ", ")
}

var words = map[Kind]string{
	Down: "down", Degraded: "degraded", Up: "back up", Late: "late", CaughtUp: "caught up", Shape: "changed shape", QuotaExhausted: "quota exhausted",
}
