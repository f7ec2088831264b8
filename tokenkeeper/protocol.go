// Package tokenkeeper shares provider access tokens (KIS) between every
// worker process on every machine through what they already share:
// Temporal. One token-keeper workflow per app key holds the token and an
// exclusive, expiring lease; Store is the connector.TokenStore the KIS
// connector uses over it, so that the token endpoint is asked once per
// validity window however many machines run, and never twice within its
// once-a-minute limit.
//
// The keeper's payloads carry the token, so every client that talks to a
// keeper — the store's and the keeper worker's — must seal them with a
// payload codec (package codec; SealingClient builds one). The store
// cannot tell a sealing client from another: cmd/sluice and the worker
// only ever give it one built from the configured key ring, and without a
// key ring they keep tokens in the file store instead.
// Workflow ids are "token-keeper/" and the store key, which the connector
// derives with a keyed hash: neither the app key nor anything that
// confirms a guess of it appears in clear.
//
// workflows.TokenKeeper implements the workflow; this package names its
// protocol and holds its pure state, so that the store never imports
// workflow code.
package tokenkeeper

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The keeper workflow's name, updates, query and id scheme.
const (
	// WorkflowName is the registered name of the token-keeper workflow.
	WorkflowName = "TokenKeeper"
	// AcquireUpdate asks for the lease (the exclusive right to issue).
	AcquireUpdate = "acquire"
	// RenewUpdate extends a held lease.
	RenewUpdate = "renew"
	// SaveUpdate stores a token under a held lease.
	SaveUpdate = "save"
	// ReleaseUpdate gives a lease back.
	ReleaseUpdate = "release"
	// StateQuery returns the keeper's State, token included (sealed by
	// the codec like every other payload of the keeper).
	StateQuery = "state"
)

// Error types of the keeper's update failures.
const (
	// ErrTypeBusy: another holder has the lease; details hold a Busy.
	ErrTypeBusy = "TokenLeaseBusy"
	// ErrTypeLeaseLost: the lease named is not (or no longer) the one
	// held: it expired and another holder took it, or it was released.
	ErrTypeLeaseLost = "TokenLeaseLost"
)

// Lease bounds.
const (
	// DefaultLeaseTTL is how long a lease lasts without renewal; the
	// store renews it every third of that while its holder works. Shorter
	// than the ingest activity's heartbeat timeout (20 s): when a holder
	// dies, the others wait it out without timing out themselves.
	DefaultLeaseTTL = 15 * time.Second
	// MinLeaseTTL and MaxLeaseTTL bound the TTL a request may ask for.
	MinLeaseTTL = time.Second
	MaxLeaseTTL = 10 * time.Minute
)

// WorkflowID is the id of the keeper of a store key (a keyed hash of the
// credentials, see kis.TokenKey), e.g. token-keeper/kis-3f…. One per
// namespace: every worker's store finds the same one.
func WorkflowID(key string) string { return "token-keeper/" + strings.TrimSpace(key) }

// TaskQueue is the task queue the keepers of workers on taskQueue run on:
// a queue of their own, served by a worker whose client seals payloads, so
// that the rest of Sluice's workflows stay readable without the key.
func TaskQueue(taskQueue string) string { return taskQueue + "-tokens" }

// Record is a stored token with its times; AccessToken is the secret
// (under the JSON key access_token, which the codec endpoint redacts).
type Record struct {
	AccessToken string    `json:"access_token,omitempty"`
	ExpiresAt   time.Time `json:"expires_at"`
	IssuedAt    time.Time `json:"issued_at"`
	RequestedAt time.Time `json:"requested_at"`
}

// String never shows the token.
func (r Record) String() string {
	set := "empty"
	if r.AccessToken != "" {
		set = "set"
	}
	return fmt.Sprintf("record{%s, expires %s, requested %s}", set, r.ExpiresAt.Format(time.RFC3339), r.RequestedAt.Format(time.RFC3339))
}

// Lease is the exclusive right, until Until (workflow time), to ask the
// token endpoint and save what it answers.
type Lease struct {
	ID      string    `json:"id"`
	Holder  string    `json:"holder"`
	Request string    `json:"request"`
	Until   time.Time `json:"until"`
}

// held reports whether the lease is held at now.
func (l Lease) held(now time.Time) bool { return l.ID != "" && now.Before(l.Until) }

// KeeperInput starts (or continues) a keeper. A store starting a keeper
// that is not running (the first one, or after it was terminated) seeds
// it with the last record the store saw, so that a terminated keeper
// forgets neither a valid token nor when one was last requested.
type KeeperInput struct {
	Key   string `json:"key"`
	State State  `json:"state"`
}

// AcquireRequest asks for the lease. Request identifies one attempt to
// take it: sent again (after a lost answer), it gets the same lease.
type AcquireRequest struct {
	Holder  string        `json:"holder"`
	Request string        `json:"request"`
	TTL     time.Duration `json:"ttl"`
}

// Validate checks the request's fields.
func (r AcquireRequest) Validate() error {
	if r.Holder == "" || r.Request == "" {
		return errors.New("acquire: holder and request are required")
	}
	return validTTL(r.TTL)
}

func validTTL(ttl time.Duration) error {
	if ttl < MinLeaseTTL || ttl > MaxLeaseTTL {
		return fmt.Errorf("lease ttl %v: want %v to %v", ttl, MinLeaseTTL, MaxLeaseTTL)
	}
	return nil
}

// AcquireResponse is the lease granted, or Busy when another holder has
// it, with the keeper's state either way.
type AcquireResponse struct {
	Lease Lease  `json:"lease"`
	Busy  *Busy  `json:"busy,omitempty"`
	Token Record `json:"token"`
}

// Busy says who holds the lease and how long until it expires.
type Busy struct {
	Holder  string        `json:"holder"`
	RetryIn time.Duration `json:"retry_in"`
}

// RenewRequest extends a held lease by TTL from now.
type RenewRequest struct {
	LeaseID string        `json:"lease_id"`
	TTL     time.Duration `json:"ttl"`
}

// SaveRequest stores a token under a held lease.
type SaveRequest struct {
	LeaseID string `json:"lease_id"`
	Token   Record `json:"token"`
}

// ReleaseRequest gives a lease back; releasing a lease not held is a
// no-op (releases are idempotent).
type ReleaseRequest struct {
	LeaseID string `json:"lease_id"`
}
