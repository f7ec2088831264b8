package ratelimit

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/internal/deployment"
	"github.com/sluicehq/sluice/ratelimit/ledger"
)

// limiterUpdatesPerRun bounds a limiter run's history: after this many
// updates it continues as new, carrying its state.
const limiterUpdatesPerRun = 1000

// CallerTTL is how long a client's limits count after its last request.
// It is longer than any grant the client holds can still be used
// (MaxAhead plus the widest tolerance), so a client's tolerance is kept
// while any of its calls may still be sent.
const CallerTTL = 10 * time.Minute

// ScopeLimiter is the singleton limiter of one scope instance (workflow id
// WorkflowID(scope)). It holds the scope's ledger — recent grants, the
// quota counts per day, the backoff state — and answers acquire updates
// with grant times, so that calls from every worker process on every
// machine are paced by one authority.
//
// The state outlives the run. It is carried across continue-as-new (every
// limiterUpdatesPerRun updates, when the server suggests it, and on a
// cancel request). A run that starts without it — after a terminate, or
// as the reset of an earlier run — grants nothing until a client has
// handed it the last run's state (RecoverUpdate, read by Client from the
// closed run), or told it to quarantine when that state cannot be read.
// The workflow itself issues no command but continue-as-new, so a reset
// replays it without a nondeterminism error.
//
// Limits are the stricter of every live caller's (CallerTTL) and the
// operator's (ReconfigureUpdate): a worker with a stale registry tightens
// the scope while it runs, and the scope relaxes once no live worker asks
// for the stricter value.
func ScopeLimiter(ctx workflow.Context, in LimiterInput) error {
	if err := in.Limits.Validate(); err != nil {
		return fmt.Errorf("starting limiter %s: %w", in.ScopeID, err)
	}
	info := workflow.GetInfo(ctx)
	runID := info.WorkflowExecution.RunID
	s := &limiterState{
		scope: in.ScopeID, ledger: in.Ledger, effective: in.Limits, callers: in.Callers,
		override: in.Override, epoch: in.Epoch,
		// A run started afresh recovers the last run's state. So does a
		// reset run: its input is its base run's, which says nothing of
		// what that run granted after the reset point.
		recovering: (in.Protocol >= LimiterProtocol && !in.Recovered) || (info.OriginalRunID != "" && runID != info.OriginalRunID),
	}
	s.ledger.Upgrade()
	// Runs recorded before priorities keep the legacy rules on replay: the
	// grants they answered were spaced by them.
	rules := ledger.RulesLegacy
	if workflow.GetVersion(ctx, priorityChange, workflow.DefaultVersion, 1) >= 1 {
		rules = ledger.RulesPriority
		s.ledger.StampLate(s.effective)
	}
	if rules >= ledger.RulesPriority && workflow.GetVersion(ctx, chainChange, workflow.DefaultVersion, 1) >= 1 {
		rules = ledger.RulesChain
	}
	// Every later generation is one more version of rulesChange.
	if rules >= ledger.RulesChain {
		if v := workflow.GetVersion(ctx, rulesChange, workflow.DefaultVersion, ledger.RulesLatest-ledger.RulesChain); v > 0 {
			rules += int(v)
		}
	}
	s.rules = rules
	log := workflow.GetLogger(ctx)
	handled := 0
	err := workflow.SetUpdateHandlerWithOptions(ctx, AcquireUpdate,
		func(ctx workflow.Context, req AcquireRequest) (AcquireResponse, error) {
			handled++
			now := workflow.Now(ctx)
			s.see(now, req.Caller, req.Limits)
			if s.recovering {
				return AcquireResponse{Recover: true, RunID: runID, Factor: 1}, nil
			}
			lim := s.effective
			s.ledger.ReleaseRules(req.Release, lim, rules)
			ans := s.ledger.Reserve(now, lim, ledger.Ask{N: req.N, MaxWait: req.MaxWait, Horizon: req.Horizon, Delay: req.Delay,
				Rules: rules, Priority: req.Priority, Caller: caller(req.Caller), Tolerance: s.tolerance(req.Limits),
				Chain: req.Chain && req.Caller != "", Lead: req.Lead, NotBefore: req.NotBefore, NotAfter: req.NotAfter})
			resp := AcquireResponse{Grants: ans.Grants, Quota: ans.Quota, RetryIn: ans.RetryIn, Factor: s.ledger.CurrentFactor(now, lim), RunID: runID,
				Rules: rules, Yielded: ans.Yielded, Links: ans.Links, Earliest: ans.Earliest, Ahead: ans.Ahead}
			for _, g := range ans.Grants {
				resp.Waits = append(resp.Waits, g.At.Sub(now))
			}
			return resp, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req AcquireRequest) error {
			if req.N < 1 || req.N > MaxBatch {
				return fmt.Errorf("acquire: n = %d, want 1 to %d", req.N, MaxBatch)
			}
			return req.Limits.Validate()
		}})
	if err != nil {
		return err
	}
	err = workflow.SetUpdateHandler(ctx, PenalizeUpdate,
		func(ctx workflow.Context, req PenalizeRequest) (PenalizeResponse, error) {
			handled++
			now := workflow.Now(ctx)
			res := s.ledger.Penalize(now, s.effective, req.Penalty)
			log.Warn("ratelimit.backoff", "scope", in.ScopeID, "factor", res.Factor, "previous", res.Previous,
				"confirmed", res.Confirmed, "pause", res.Pause, "reason", req.Reason)
			return res, nil
		})
	if err != nil {
		return err
	}
	state := func() (State, error) { return s.state(workflow.Now(ctx), runID), nil }
	if err := workflow.SetQueryHandler(ctx, StateQuery, state); err != nil {
		return err
	}
	err = workflow.SetUpdateHandler(ctx, PingUpdate, func(ctx workflow.Context) (State, error) {
		handled++
		return state()
	})
	if err != nil {
		return err
	}
	err = workflow.SetUpdateHandler(ctx, RecoverUpdate, func(ctx workflow.Context, req RecoverRequest) (State, error) {
		handled++
		now := workflow.Now(ctx)
		if s.recovering && req.ForRunID == runID {
			s.recover(now, req)
			log.Info("limiter recovered", "scope", in.ScopeID, "from", req.From, "quarantine", req.Quarantine, "reason", req.Reason)
		}
		return state()
	})
	if err != nil {
		return err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, ReconfigureUpdate,
		func(ctx workflow.Context, req ReconfigureRequest) (State, error) {
			handled++
			s.reconfigure(workflow.Now(ctx), req)
			log.Info("limiter reconfigured", "scope", in.ScopeID, "cleared", req.Limits == nil, "reason", req.Reason, "caller", req.Caller)
			return state()
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req ReconfigureRequest) error {
			if req.Limits == nil {
				return nil
			}
			return req.Limits.Validate()
		}})
	if err != nil {
		return err
	}
	err = workflow.Await(ctx, func() bool {
		return !s.recovering && (handled >= limiterUpdatesPerRun || deployment.Suggested(ctx))
	})
	if err != nil {
		if !temporal.IsCanceledError(err) {
			return err
		}
		// A cancel request ends this run, not the scope's state: continue
		// as new with it.
		ctx, _ = workflow.NewDisconnectedContext(ctx)
		log.Warn("limiter cancelled; continuing as new with its state", "scope", in.ScopeID, "recovering", s.recovering)
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	return deployment.ContinueAsNew(ctx, WorkflowName, s.input())
}

// priorityChange is the workflow.GetVersion change id of RulesPriority.
const priorityChange = "limiter-priority"

// chainChange is the workflow.GetVersion change id of RulesChain.
const chainChange = "limiter-chain"

// rulesChange is the workflow.GetVersion change id of every generation of
// rules after RulesChain: version v is generation RulesChain + v.
const rulesChange = "limiter-rules"

func caller(c string) string {
	if c == "" {
		return "?"
	}
	return c
}

// tolerance is the slack the ledger keeps after a grant to this caller: its
// own tolerance, at least the operator's.
func (s *limiterState) tolerance(req ledger.Limits) time.Duration {
	t := req.Tolerance
	if s.override != nil {
		t = max(t, s.override.Tolerance)
	}
	return t
}

// limiterState is a limiter run's state.
type limiterState struct {
	scope     string
	ledger    ledger.Ledger
	effective ledger.Limits
	callers   []CallerLimits // sorted by Caller
	override  *ledger.Limits
	epoch     int
	// reconfigured is set when this run was reconfigured while recovering:
	// its override then wins over the recovered one.
	reconfigured  bool
	recovering    bool
	recoveredFrom string
	rules         int
}

func (s *limiterState) input() LimiterInput {
	return LimiterInput{ScopeID: s.scope, Protocol: LimiterProtocol, Limits: s.effective, Ledger: s.ledger, Callers: s.callers,
		Override: s.override, Epoch: s.epoch, Recovered: !s.recovering}
}

func (s *limiterState) state(now time.Time, runID string) State {
	// The generation is part of the answer from RulesAnswer on: the
	// answers of earlier runs keep their recorded shape.
	rules := 0
	if s.rules >= ledger.RulesAnswer {
		rules = s.rules
	}
	return State{Rules: rules, ScopeID: s.scope, RunID: runID, Limits: s.effective, Ledger: s.ledger, Callers: s.callers,
		Override: s.override, Epoch: s.epoch, Recovering: s.recovering, RecoveredFrom: s.recoveredFrom,
		Factor: s.ledger.CurrentFactor(now, s.effective), Now: now}
}

// see records the limits a caller asks with and recomputes the effective
// limits.
func (s *limiterState) see(now time.Time, id string, lim ledger.Limits) {
	s.upsert(CallerLimits{Caller: caller(id), Limits: lim, Seen: now, Epoch: s.epoch})
	s.recompute(now)
}

// recompute drops callers not seen for CallerTTL and sets the effective
// limits: the stricter of the operator's and every live caller's that
// asked since the last reconfigure, with the widest tolerance of any live
// caller. With nobody live and no operator's limits, they stay as they
// were.
func (s *limiterState) recompute(now time.Time) {
	s.callers = slices.DeleteFunc(s.callers, func(c CallerLimits) bool { return now.Sub(c.Seen) > CallerTTL })
	var eff *ledger.Limits
	if s.override != nil {
		o := *s.override
		eff = &o
	}
	var tol time.Duration
	for _, c := range s.callers {
		tol = max(tol, c.Limits.Tolerance)
		if c.Epoch != s.epoch {
			continue
		}
		if eff == nil {
			l := c.Limits
			eff = &l
		} else {
			l := ledger.Stricter(*eff, c.Limits)
			eff = &l
		}
	}
	if eff == nil {
		return
	}
	eff.Tolerance = max(eff.Tolerance, tol)
	s.effective = *eff
}

func (s *limiterState) reconfigure(now time.Time, req ReconfigureRequest) {
	if req.Limits != nil {
		o := *req.Limits
		s.override = &o
	} else {
		s.override = nil
	}
	s.epoch++
	if s.recovering {
		s.reconfigured = true
	}
	s.recompute(now)
}

// recover applies a RecoverRequest: the run before's state, a quarantine,
// or nothing (a first run). What this run learnt while recovering — a
// penalty, an operator's limits, its callers — is kept.
func (s *limiterState) recover(now time.Time, req RecoverRequest) {
	pending := s.ledger
	switch {
	case req.State != nil:
		st := req.State
		s.ledger = st.Ledger
		s.ledger.Upgrade()
		if ledger.Rules(s.rules).Priority {
			s.ledger.StampLate(ledger.Stricter(st.Limits, s.effective))
		}
		mine, myEpoch := s.callers, s.epoch
		s.callers = slices.Clone(st.Callers)
		slices.SortFunc(s.callers, func(a, b CallerLimits) int { return strings.Compare(a.Caller, b.Caller) })
		if s.reconfigured {
			s.epoch = max(st.Epoch, myEpoch) + 1
		} else {
			s.epoch, s.override = st.Epoch, st.Override
		}
		for _, c := range mine {
			if c.Epoch == myEpoch {
				c.Epoch = s.epoch
			} else {
				c.Epoch = -1 // asked before this run's reconfigure
			}
			s.upsert(c)
		}
		if len(s.callers) == 0 && s.override == nil && st.Limits.Validate() == nil {
			s.effective = st.Limits
		}
	case req.Quarantine:
		s.ledger.Quarantine(now, s.effective)
	}
	s.ledger.AbsorbBackoff(pending, now, s.effective)
	s.recovering, s.recoveredFrom = false, req.From
	s.recompute(now)
}

func (s *limiterState) upsert(c CallerLimits) {
	i, found := slices.BinarySearchFunc(s.callers, c.Caller, func(x CallerLimits, id string) int { return strings.Compare(x.Caller, id) })
	if found {
		s.callers[i] = c
	} else {
		s.callers = slices.Insert(s.callers, i, c)
	}
}
