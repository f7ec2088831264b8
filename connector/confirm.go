package connector

import (
	"fmt"
	"sync"
	"time"
)

// DefaultConfirm is how many ambiguous answers in a row confirm their
// class (Error.Confirm): three, as the watch confirms an outage from more
// than one probe.
const DefaultConfirm = 3

// ConfirmWait is the least wait after an unconfirmed answer: long enough
// that a burst which provoked it (data.go.kr's code 30 under load) has
// passed, short enough that a retry policy reaches confirmation within a
// minute when the answer is meant.
const ConfirmWait = 10 * time.Second

// confirmations counts a provider's ambiguous answers in a row, by class
// and code; any success starts every count over. It lives in one process:
// with several workers a broken key is confirmed by each of them, which
// costs at most Confirm-1 calls per worker.
type confirmations struct {
	mu sync.Mutex
	n  map[string]int
}

// confirm applies e.Confirm: it counts e and, while fewer than Confirm
// answers like it came in a row, turns e into an unconfirmed Transient
// error (Unconfirmed set to the class it would have, waiting at least
// ConfirmWait, the provider's code and message kept). An error without
// Confirm, or the Confirm-th in a row, is left as it is.
func (c *confirmations) confirm(e *Error) {
	if e.Confirm <= 1 || e.Unconfirmed != 0 {
		return
	}
	key := e.Class.String() + "\x00" + e.Code
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
	n := c.n[key]
	if n >= e.Confirm {
		delete(c.n, key) // confirmed: the next ambiguous answer counts anew
	}
	c.mu.Unlock()
	if n >= e.Confirm {
		e.Message = fmt.Sprintf("confirmed by %d answers in a row: %s", n, e.Message)
		return
	}
	e.Message = fmt.Sprintf("unconfirmed %s (%d of %d): %s", e.Class, n, e.Confirm, e.Message)
	e.Unconfirmed = e.Class
	e.Class = Transient
	e.RetryAfter = max(e.RetryAfter, ConfirmWait)
	e.ResetAt, e.Until = time.Time{}, time.Time{}
}

// succeeded starts every count over: the provider answered well, so the
// ambiguous answers before were not meant.
func (c *confirmations) succeeded() {
	c.mu.Lock()
	clear(c.n)
	c.mu.Unlock()
}
