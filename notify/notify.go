// Package notify turns the watch's confirmed Changes into notifications
// for people (docs/notifications.md): which changes are worth telling
// (a dataset down, back up, degraded, late, caught up, its answer's shape
// changed, a daily quota exhausted — never our own throttling nor a provider's
// rate-limit answer), how they are grouped (one message per provider and
// batch: a provider whose 100 datasets go down together is one message,
// the provider's down when they are all it has),
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
	// Watched is how many datasets of the provider the watch probed when
	// the change was made (0: not said): what GroupProviders compares a
	// group's downs and recoveries with.
	Watched int `json:"watched,omitempty"`
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
	// State is the provider's own change (GroupProviders): Down when
	// every dataset of it the watch probes went down within the group,
	// Up when every one came back up; empty otherwise.
	State Kind `json:"state,omitempty"`
	// Watched is, with State, how many datasets of the provider the
	// watch probes: all of them went State.
	Watched int      `json:"watched,omitempty"`
	Changes []Change `json:"changes"`
}

// Group returns one notification per provider for a batch of changes,
// sorted by provider, each with its changes in time order; a change whose
// key came earlier in the batch is dropped.
func Group(changes []Change) []Notification { return group(changes, false) }

// GroupProviders is Group that also tells a provider's own change: when
// every dataset of a provider the watch probes (Change.Watched, the
// largest the group's changes say) ends the group down — its last down or
// recovery in the group is a down — the notification is the provider's
// down (State Down, title "kis down: 100 of 100 datasets"); when every
// one comes back up from down, and none went down in the group, it is the
// provider's recovery ("kis back up: 100 of 100 datasets"). The changes
// are all still in Changes; Slack lists only those the provider's state
// does not cover.
func GroupProviders(changes []Change) []Notification { return group(changes, true) }

func group(changes []Change, withState bool) []Notification {
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
		n := Notification{ID: "sluice-" + key(keys...), Provider: p, Title: title(p, cs), At: cs[len(cs)-1].At, Changes: cs}
		if withState {
			if state, watched := providerState(cs); state != "" {
				n.State, n.Watched = state, watched
				n.Title = stateTitle(p, state, watched, cs)
			}
		}
		out = append(out, n)
	}
	return out
}

// providerState returns the provider's own change a group's changes (in
// time order) make, and how many datasets the watch probes: Down when at
// least that many datasets end the group down, Up when that many end it
// back up from down and none went down; "" when neither, or when the
// changes do not say how many datasets are watched.
func providerState(cs []Change) (Kind, int) {
	watched := 0
	for _, c := range cs {
		watched = max(watched, c.Watched)
	}
	if watched == 0 {
		return "", 0
	}
	last := map[string]Kind{} // a dataset's last down or recovery from down
	var datasets []string
	anyDown := false
	for _, c := range cs {
		if !coveredKind(c) {
			continue
		}
		if _, ok := last[c.Dataset]; !ok {
			datasets = append(datasets, c.Dataset)
		}
		last[c.Dataset] = c.Kind
		anyDown = anyDown || c.Kind == Down
	}
	count := map[Kind]int{}
	for _, d := range datasets {
		count[last[d]]++
	}
	switch {
	case count[Down] >= watched:
		return Down, count[Down]
	case count[Up] >= watched && !anyDown:
		return Up, count[Up]
	}
	return "", 0
}

// coveredKind reports whether a change is one a provider's state is made
// of: a dataset's down, or its recovery from down (not from degraded).
func coveredKind(c Change) bool {
	return c.Dataset != "" && (c.Kind == Down || (c.Kind == Up && c.From == "down"))
}

// Covered reports whether a notification's provider State stands for c:
// c is a dataset's change of the kind State says (so Slack need not list
// it).
func (n Notification) Covered(c Change) bool {
	return n.State != "" && coveredKind(c) && c.Kind == n.State
}

// stateTitle is the title of a provider's own change: "kis down: 100 of
// 100 datasets", and the group's other changes after it ("; 2 late").
func stateTitle(provider string, state Kind, watched int, cs []Change) string {
	t := fmt.Sprintf("%s %s: %d of %d datasets", provider, words[state], watched, watched)
	var rest []Change
	for _, c := range cs {
		if !(coveredKind(c) && c.Kind == state) {
			rest = append(rest, c)
		}
	}
	if len(rest) == 0 {
		return t
	}
	return t + "; " + strings.Join(kindCounts(rest), ", ")
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
	parts := kindCounts(cs)
	if len(parts) == 1 {
		n, word, _ := strings.Cut(parts[0], " ")
		return fmt.Sprintf("%s: %s datasets %s", provider, n, word)
	}
	return provider + ": " + strings.Join(parts, ", ")
}

// kindCounts says how many of cs are of each kind, in kindOrder: "2 down",
// "1 late".
func kindCounts(cs []Change) []string {
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
	return parts
}

var words = map[Kind]string{
	Down: "down", Degraded: "degraded", Up: "back up", Late: "late", CaughtUp: "caught up", Shape: "changed shape", QuotaExhausted: "quota exhausted",
}
