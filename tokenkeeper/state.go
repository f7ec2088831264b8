package tokenkeeper

import (
	"fmt"
	"time"
)

// State is everything a keeper holds: the token record, the lease, and
// counters. Its methods are the keeper's rules, pure and with time as a
// parameter; the workflow only calls them.
type State struct {
	Token Record `json:"token"`
	Lease Lease  `json:"lease"`
	// Granted counts the leases granted over the keeper's life (across
	// continue-as-new); lease ids are numbered by it.
	Granted int64 `json:"granted"`
	// Issued counts saves that stored a new access token.
	Issued int64 `json:"issued"`
}

// Busy returns who holds the lease at now, or nil when req may have it:
// the lease is free, expired, or already req's (a repeated request).
func (s *State) Busy(now time.Time, req AcquireRequest) *Busy {
	if !s.Lease.held(now) || s.Lease.Request == req.Request {
		return nil
	}
	return &Busy{Holder: s.Lease.Holder, RetryIn: s.Lease.Until.Sub(now)}
}

// Acquire grants req the lease at now under id (which must be unique over
// the keeper's life), or returns Busy. A repeated request gets the lease
// it was granted, renewed.
func (s *State) Acquire(now time.Time, req AcquireRequest, id string) AcquireResponse {
	if b := s.Busy(now, req); b != nil {
		return AcquireResponse{Busy: b, Token: s.Token}
	}
	if s.Lease.ID != "" && s.Lease.Request == req.Request {
		s.Lease.Until = now.Add(req.TTL)
		return AcquireResponse{Lease: s.Lease, Token: s.Token}
	}
	s.Granted++
	s.Lease = Lease{ID: id, Holder: req.Holder, Request: req.Request, Until: now.Add(req.TTL)}
	return AcquireResponse{Lease: s.Lease, Token: s.Token}
}

// Holds returns an error unless id is the lease currently granted. A
// lease past its time that nobody else took is still its holder's: only a
// new grant ends it.
func (s *State) Holds(id string) error {
	if id == "" || s.Lease.ID != id {
		return &LeaseLostError{LeaseID: id}
	}
	return nil
}

// Renew extends the lease id by ttl from now.
func (s *State) Renew(now time.Time, id string, ttl time.Duration) (Lease, error) {
	if err := s.Holds(id); err != nil {
		return Lease{}, err
	}
	s.Lease.Until = now.Add(ttl)
	return s.Lease, nil
}

// Save stores rec under the lease id.
func (s *State) Save(id string, rec Record) error {
	if err := s.Holds(id); err != nil {
		return err
	}
	if rec.AccessToken != "" && rec.AccessToken != s.Token.AccessToken {
		s.Issued++
	}
	s.Token = rec
	return nil
}

// Release frees the lease id; a lease not held is ignored.
func (s *State) Release(id string) {
	if s.Holds(id) == nil {
		s.Lease = Lease{}
	}
}

// LeaseLostError: the lease named is not the one the keeper holds.
type LeaseLostError struct{ LeaseID string }

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("token lease %q is not held (it expired and was granted to another holder, or was released)", e.LeaseID)
}
