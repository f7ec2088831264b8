// Package watch is the domain logic of Sluice's dataset watch (docs/watch.md):
// the probe record, the per-dataset state machine (up, degraded, down,
// unknown) with confirmation of failures within the gate's reserved
// budget, and the Change detectors — state, shape, late data and
// revisions.
//
// Everything here is pure and deterministic: time is passed in, nothing
// reads a clock, a network or a database, and nothing imports Temporal, so
// the same code runs inside activities, in a status server and in tests.
// Persistence lives in the watch/store package. docs/watch.md writes the
// rules down.
package watch
