package connector

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Token is an access token as a TokenStore keeps it: the token, when it
// expires, when it was issued and when the token endpoint was last asked.
// String and LogValue never show the token itself.
type Token struct {
	AccessToken string    // the token; a secret
	ExpiresAt   time.Time // when the provider stops accepting it
	IssuedAt    time.Time // when the token endpoint issued it
	// RequestedAt is when the token endpoint was last asked for this key,
	// whether or not it answered with a token; the once-a-minute rule of
	// the KIS token endpoint counts from it.
	RequestedAt time.Time
}

// Valid reports whether the token is set and has not expired at now.
func (t Token) Valid(now time.Time) bool {
	return t.AccessToken != "" && now.Before(t.ExpiresAt)
}

// String describes the token without revealing it.
func (t Token) String() string {
	state := "empty"
	if t.AccessToken != "" {
		state = Redacted
	}
	return fmt.Sprintf("token{%s, expires %s, issued %s}", state,
		t.ExpiresAt.Format(time.RFC3339), t.IssuedAt.Format(time.RFC3339))
}

// LogValue logs the token's times, never the token.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Bool("set", t.AccessToken != ""),
		slog.Time("expires_at", t.ExpiresAt),
		slog.Time("issued_at", t.IssuedAt),
	)
}

// TokenStore keeps issued tokens where every process (and, for a shared
// implementation, every machine) using the same credentials finds them, so
// that a token is issued once per validity window, not once per process.
//
// Keys are opaque, non-secret identifiers the connector derives from the
// credentials (a hash; never the raw key). The connector calls Load without
// the lock to find a usable token cheaply, and, when it needs a new one,
// WithLock → Load → (issue) → Save, so that exactly one holder of the lock
// issues and the others find its token. The file store
// (connector/tokenstore) serves one machine; the token keepers
// (package tokenkeeper: a Temporal workflow per key, payloads sealed)
// serve every machine sharing a Temporal namespace, and replace it
// without touching the connector.
type TokenStore interface {
	// Load returns the stored token for key; ok is false when none is
	// stored. A store must never return a torn write.
	Load(ctx context.Context, key string) (t Token, ok bool, err error)
	// Save stores the token for key; it is called while holding the lock.
	Save(ctx context.Context, key string, t Token) error
	// WithLock runs fn while holding the exclusive lock for key across
	// every process sharing the store. It waits for the lock until ctx is
	// done.
	WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error
}

// TokenIssue is what a connector tells Options.TokenIssued about a token
// it was issued: the provider and the token's times. It holds no token,
// key or secret, so it may be logged and recorded anywhere.
type TokenIssue struct {
	Provider  string
	IssuedAt  time.Time
	ExpiresAt time.Time
	// Reason says why a token was asked for: "none" (none was stored),
	// "expiring" (the stored one was within its refresh window or past
	// its expiry) or "rejected" (the gateway refused the stored one).
	Reason string
}
