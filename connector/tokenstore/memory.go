package tokenstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/connector"
)

// Memory is a connector.TokenStore that lives and dies with its process:
// the store of a connector given none (one token per app key in this
// process only). Processes that share tokens use File or the token
// keepers.
type Memory struct {
	mu     sync.Mutex
	tokens map[string]connector.Token
	locks  map[string]chan struct{} // a one-slot semaphore per key
}

var _ connector.TokenStore = (*Memory)(nil)

// NewMemory returns an empty in-process store.
func NewMemory() *Memory {
	return &Memory{tokens: map[string]connector.Token{}, locks: map[string]chan struct{}{}}
}

// Load returns the token saved for key in this process.
func (m *Memory) Load(_ context.Context, key string) (connector.Token, bool, error) {
	if !validKey.MatchString(key) {
		return connector.Token{}, false, fmt.Errorf("loading token: token store key %q: expected 1 to 128 letters, digits, - or _", key)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[key]
	return t, ok, nil
}

// Save keeps the token for key.
func (m *Memory) Save(_ context.Context, key string, t connector.Token) error {
	if !validKey.MatchString(key) {
		return fmt.Errorf("saving token: token store key %q: expected 1 to 128 letters, digits, - or _", key)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens[key] = t
	return nil
}

// WithLock runs fn holding key's lock, which excludes the other callers
// of this store; it waits for the lock until ctx is done.
func (m *Memory) WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error {
	if !validKey.MatchString(key) {
		return fmt.Errorf("locking token: token store key %q: expected 1 to 128 letters, digits, - or _", key)
	}
	m.mu.Lock()
	l, ok := m.locks[key]
	if !ok {
		l = make(chan struct{}, 1)
		m.locks[key] = l
	}
	m.mu.Unlock()
	select {
	case l <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("locking token %s: %w", key, ctx.Err())
	}
	defer func() { <-l }()
	return fn(ctx)
}
