package tokenkeeper

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func req(holder, id string) AcquireRequest {
	return AcquireRequest{Holder: holder, Request: id, TTL: 30 * time.Second}
}

func TestLeaseIsExclusiveUntilItExpires(t *testing.T) {
	var s State
	a := s.Acquire(t0, req("a", "r1"), "L1")
	if a.Busy != nil || a.Lease.ID != "L1" || !a.Lease.Until.Equal(t0.Add(30*time.Second)) || s.Granted != 1 {
		t.Fatalf("first acquire: %+v (granted %d)", a, s.Granted)
	}
	b := s.Acquire(t0.Add(10*time.Second), req("b", "r2"), "L2")
	if b.Busy == nil || b.Busy.Holder != "a" || b.Busy.RetryIn != 20*time.Second || b.Lease.ID != "" || s.Granted != 1 {
		t.Fatalf("acquire while held: %+v", b)
	}
	if s.Busy(t0.Add(10*time.Second), req("b", "r2")) == nil {
		t.Error("Busy disagrees with Acquire")
	}
	// The same request again (its answer was lost) gets its lease back,
	// renewed, without a new grant.
	again := s.Acquire(t0.Add(20*time.Second), req("a", "r1"), "L9")
	if again.Lease.ID != "L1" || !again.Lease.Until.Equal(t0.Add(50*time.Second)) || s.Granted != 1 {
		t.Fatalf("repeated request: %+v (granted %d)", again, s.Granted)
	}
	// At expiry it is free for the next holder.
	c := s.Acquire(t0.Add(50*time.Second), req("b", "r2"), "L2")
	if c.Busy != nil || c.Lease.ID != "L2" || s.Granted != 2 {
		t.Fatalf("acquire at expiry: %+v", c)
	}
}

func TestOnlyTheHolderSavesRenewsAndReleases(t *testing.T) {
	var s State
	s.Acquire(t0, req("a", "r1"), "L1")
	tok := Record{AccessToken: "tok-1", ExpiresAt: t0.Add(24 * time.Hour), IssuedAt: t0, RequestedAt: t0}
	if err := s.Save("L1", Record{RequestedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if s.Issued != 0 {
		t.Errorf("recording a request counted as an issuance")
	}
	if err := s.Save("L1", tok); err != nil || s.Issued != 1 || s.Token != tok {
		t.Fatalf("save: %v, issued %d, token %v", err, s.Issued, s.Token)
	}
	if err := s.Save("L1", tok); err != nil || s.Issued != 1 {
		t.Errorf("saving the same token again counted: %d", s.Issued)
	}
	// The lease expires and b takes it: a's lease is lost for every use.
	s.Acquire(t0.Add(time.Minute), req("b", "r2"), "L2")
	var lost *LeaseLostError
	if err := s.Save("L1", Record{AccessToken: "stale"}); !errors.As(err, &lost) || s.Token.AccessToken != "tok-1" {
		t.Errorf("save under a lost lease: %v, token %v", err, s.Token)
	}
	if _, err := s.Renew(t0.Add(time.Minute), "L1", time.Minute); !errors.As(err, &lost) {
		t.Errorf("renew of a lost lease: %v", err)
	}
	s.Release("L1") // ignored: not held
	if s.Lease.ID != "L2" {
		t.Fatalf("a stale release freed the lease: %+v", s.Lease)
	}
	if l, err := s.Renew(t0.Add(70*time.Second), "L2", time.Minute); err != nil || !l.Until.Equal(t0.Add(130*time.Second)) {
		t.Errorf("renew: %+v %v", l, err)
	}
	s.Release("L2")
	s.Release("L2") // idempotent
	if s.Lease != (Lease{}) {
		t.Errorf("lease after release: %+v", s.Lease)
	}
	if err := s.Holds(""); err == nil {
		t.Error("the empty lease id holds")
	}
	// A lease past its time that nobody took is still its holder's.
	s.Acquire(t0.Add(2*time.Minute), req("c", "r3"), "L3")
	if err := s.Save("L3", tok); err != nil {
		t.Errorf("save after the ttl, lease not taken: %v", err)
	}
}

func TestRequestsAreValidated(t *testing.T) {
	for _, r := range []AcquireRequest{{Request: "r", TTL: time.Minute}, {Holder: "h", TTL: time.Minute},
		{Holder: "h", Request: "r"}, {Holder: "h", Request: "r", TTL: time.Hour}} {
		if r.Validate() == nil {
			t.Errorf("%+v validated", r)
		}
	}
	if err := req("h", "r").Validate(); err != nil {
		t.Error(err)
	}
	if s := (Record{AccessToken: "tok-secret"}).String(); strings.Contains(s, "tok-secret") {
		t.Errorf("Record.String shows the token: %s", s)
	}
}
