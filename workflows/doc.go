// Package workflows holds Sluice's batch workflows: the daily ingest that
// fans out one activity per dataset and waits out exhausted daily quotas
// on durable timers. The per-scope limiter workflow lives with the rest of
// rate limiting in package ratelimit, the events workflow in package
// events.
//
// Workflow code here is deterministic (checked by workflowcheck in make
// test): no I/O, no wall clock, no map iteration that affects commands.
package workflows
