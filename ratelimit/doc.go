// Package ratelimit holds Sluice's provider-scoped rate limits, read
// top-down in four layers (docs/ratelimit.md, "Layout"):
//
//   - the arithmetic, package ratelimit/ledger: the deterministic ledger
//     that decides when a call may be sent, with time as a parameter;
//   - the workflow that owns a ledger: one singleton ScopeLimiter per
//     scope instance (limiter.go), its updates and queries (protocol.go);
//   - the worker-side Client, through which every worker process asks a
//     scope's limiter for permits, batched per process so that in-flight
//     updates stay few (client.go, chain.go: the process's own sends;
//     recover.go: recovering a limiter's state);
//   - the Gate, the policy of one worker process, which holds each call
//     to every scope it counts against (gate.go) and is the
//     permit.Limiter every connector takes.
//
// The contract a connector sees is package ratelimit/permit; a connector
// knows nothing else of rate limiting.
//
// The guarantee: for every scope instance, across all workers, the calls
// Sluice sends never exceed a declared count in any sliding window of the
// declared length, two calls are never closer than the declared minimum
// interval, and daily quotas are counted durably.
package ratelimit
