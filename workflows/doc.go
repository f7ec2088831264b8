// Package workflows holds Sluice's Temporal workflows: the daily ingest
// that fans out one activity per dataset, and the per-scope limiter that
// paces every provider call across all workers.
//
// Workflow code here is deterministic (checked by workflowcheck in make
// test): no I/O, no wall clock, no map iteration that affects commands.
package workflows
