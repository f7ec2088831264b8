// Package kind names what each Sluice workflow is — a daily run, a
// backfill, a watch, a limiter, a token keeper, the events log — as the
// keyword search attribute SluiceKind, set when the workflow starts (a
// run continuing as new keeps it), so that the Web UI's workflow list
// filters to what a person looks for: SluiceKind = "daily".
package kind

import "go.temporal.io/sdk/temporal"

// Name is the search attribute's name; a server Sluice does not embed
// needs it added once (docs/production.md).
const Name = "SluiceKind"

// Attr is the SluiceKind search attribute.
var Attr = temporal.NewSearchAttributeKeyKeyword(Name)

// The kinds.
const (
	Daily    = "daily"    // a daily ingest, started by a schedule or a command
	Backfill = "backfill" // a backfill and its per-dataset children
	Watch    = "watch"    // one dataset's watch
	Limiter  = "limiter"  // one rate-limit scope's limiter
	Keeper   = "keeper"   // a KIS token keeper
	Events   = "events"   // the operational events log
	Refetch  = "refetch"  // a lake repair's refetch
)

// Of returns the search attributes that mark a workflow of kind k.
func Of(k string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(Attr.ValueSet(k))
}
