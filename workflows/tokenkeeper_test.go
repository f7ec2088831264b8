package workflows_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/tokenkeeper"
	"github.com/sluicehq/sluice/workflows"
)

// update sends one update in the test environment and records whether it
// was rejected by its validator, and its result or error.
type updateResult struct {
	rejected error
	err      error
	value    any
}

var updateSeq int

func sendUpdate(env *testsuite.TestWorkflowEnvironment, name string, arg any, out any) *updateResult {
	r := &updateResult{}
	updateSeq++
	env.UpdateWorkflow(name, fmt.Sprintf("%s-%d", name, updateSeq), &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { r.rejected = err },
		OnComplete: func(v interface{}, err error) {
			r.value, r.err = v, err
			if out != nil && v != nil {
				if p, ok := out.(*tokenkeeper.AcquireResponse); ok {
					*p = v.(tokenkeeper.AcquireResponse)
				}
			}
		},
	}, arg)
	return r
}

// TestTokenKeeperLeaseAndContinueAsNew drives the keeper with updates on
// the test environment's clock: the lease is exclusive (a second holder
// is refused by the validator, leaving no history), expires, fences the
// old holder's saves, and the whole state — token and lease counter —
// survives continue-as-new.
func TestTokenKeeperLeaseAndContinueAsNew(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.TokenKeeper, workflow.RegisterOptions{Name: tokenkeeper.WorkflowName})
	tok := tokenkeeper.Record{AccessToken: "tok-canary", ExpiresAt: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)}
	ttl := 30 * time.Second
	var a, b tokenkeeper.AcquireResponse
	var busy, saveA, badSave, lateSave, release *updateResult
	env.RegisterDelayedCallback(func() {
		sendUpdate(env, tokenkeeper.AcquireUpdate, tokenkeeper.AcquireRequest{Holder: "a", Request: "r1", TTL: ttl}, &a)
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		busy = sendUpdate(env, tokenkeeper.AcquireUpdate, tokenkeeper.AcquireRequest{Holder: "b", Request: "r2", TTL: ttl}, nil)
		saveA = sendUpdate(env, tokenkeeper.SaveUpdate, tokenkeeper.SaveRequest{LeaseID: a.Lease.ID, Token: tok}, nil)
		badSave = sendUpdate(env, tokenkeeper.SaveUpdate, tokenkeeper.SaveRequest{LeaseID: "forged", Token: tokenkeeper.Record{AccessToken: "x"}}, nil)
	}, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		sendUpdate(env, tokenkeeper.AcquireUpdate, tokenkeeper.AcquireRequest{Holder: "b", Request: "r2", TTL: ttl}, &b)
		lateSave = sendUpdate(env, tokenkeeper.SaveUpdate, tokenkeeper.SaveRequest{LeaseID: a.Lease.ID, Token: tokenkeeper.Record{AccessToken: "stale"}}, nil)
	}, 40*time.Second)
	env.RegisterDelayedCallback(func() {
		release = sendUpdate(env, tokenkeeper.ReleaseUpdate, tokenkeeper.ReleaseRequest{LeaseID: b.Lease.ID}, nil)
	}, 41*time.Second)
	// Enough accepted updates to reach the run's bound: one holder asking
	// again and again with one request (each answered with its lease).
	env.RegisterDelayedCallback(func() {
		for range 500 {
			sendUpdate(env, tokenkeeper.AcquireUpdate, tokenkeeper.AcquireRequest{Holder: "c", Request: "c1", TTL: ttl}, nil)
		}
	}, time.Minute)
	env.ExecuteWorkflow(tokenkeeper.WorkflowName, tokenkeeper.KeeperInput{Key: "kis-test"})

	if a.Lease.ID == "" || a.Busy != nil {
		t.Fatalf("first acquire: %+v", a)
	}
	var ae *temporal.ApplicationError
	if busy == nil || !errors.As(busy.rejected, &ae) || ae.Type() != tokenkeeper.ErrTypeBusy {
		t.Errorf("second holder while held: %+v", busy)
	} else {
		var d tokenkeeper.Busy
		if err := ae.Details(&d); err != nil || d.Holder != "a" || d.RetryIn != 29*time.Second {
			t.Errorf("busy details %+v %v", d, err)
		}
	}
	if saveA.rejected != nil || saveA.err != nil {
		t.Errorf("holder's save: %+v", saveA)
	}
	if badSave.rejected == nil || lateSave.rejected == nil {
		t.Errorf("saves without the lease were not refused: forged %+v, stale %+v", badSave, lateSave)
	}
	if b.Lease.ID == "" || b.Lease.ID == a.Lease.ID {
		t.Errorf("acquire after expiry: %+v (a had %s)", b, a.Lease.ID)
	}
	if release == nil || release.rejected != nil || release.err != nil {
		t.Errorf("release by the holder: %+v", release)
	}
	if b.Token.AccessToken != "tok-canary" {
		t.Errorf("the next holder does not see the token")
	}

	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("the keeper did not continue as new: %v", err)
	}
	var next tokenkeeper.KeeperInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Key != "kis-test" || next.State.Token != tok || next.State.Granted != 3 || next.State.Issued != 1 || next.State.Lease.Holder != "c" {
		t.Errorf("continued with %+v", next)
	}
	if !strings.Contains(b.Lease.ID, "/2") {
		t.Errorf("lease ids are not numbered: %s", b.Lease.ID)
	}
}
