package ledger

import (
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit/permit"
)

// TestReserveWithinWindow: an ask bounded to a window of the ledger's
// clock (Ask.NotBefore, Ask.NotAfter — how a call holding several scopes
// asks for each after the first) gets a grant inside it, or nothing: the
// first slot is named (Answer.Earliest) and the ledger, its day counts and
// its ids are left exactly as they were, so a miss costs the scope no slot.
// The old ledger had no window: it granted the slot after it, which the
// caller then had to give back — as the generations before RulesWindow
// still do, so that their runs replay as recorded.
func TestReserveWithinWindow(t *testing.T) {
	lim := Limits{MinInterval: 150 * time.Millisecond, DailyQuota: 100, Tolerance: 50 * time.Millisecond}
	for _, rules := range []int{RulesWindow, RulesLatest} {
		var l Ledger
		first := l.Reserve(t0, lim, Ask{N: 1, Rules: rules, Caller: "a"})
		if len(first.Grants) != 1 {
			t.Fatalf("rules %d: first ask got %d grants", rules, len(first.Grants))
		}
		next := first.Grants[0].Late.Add(lim.MinInterval + slack) // the scope's first free slot
		before := clone(l)
		for _, prio := range []permit.Priority{permit.PriorityDaily, permit.PriorityBackfill} {
			miss := l.Reserve(t0, lim, Ask{N: 1, Rules: rules, Caller: "b", Priority: prio,
				NotBefore: t0.Add(10 * time.Millisecond), NotAfter: next.Add(-time.Millisecond)})
			if len(miss.Grants) != 0 || !miss.Earliest.Equal(next) {
				t.Fatalf("rules %d: a window ending before the free slot %s got %d grants, earliest %s", rules, next, len(miss.Grants), miss.Earliest)
			}
			l.Waiting = nil // a daily miss leaves its caller waiting: that alone may change
			if !reflect.DeepEqual(l, before) {
				t.Fatalf("rules %d: a miss changed the ledger:\n%+v\nwas\n%+v", rules, l, before)
			}
		}
		o := clone(l)
		if old := o.Reserve(t0, lim, Ask{N: 1, Rules: RulesAnswer, Caller: "b", NotAfter: next.Add(-time.Millisecond)}); len(old.Grants) != 1 || !old.Earliest.IsZero() {
			t.Fatalf("RulesAnswer: a windowed ask got %+v, want the window ignored", old)
		}
		hit := l.Reserve(t0, lim, Ask{N: 1, Rules: rules, Caller: "b", NotBefore: next.Add(5 * time.Millisecond), NotAfter: next.Add(5 * time.Millisecond)})
		if len(hit.Grants) != 1 || !hit.Grants[0].At.Equal(next.Add(5*time.Millisecond)) || !hit.Earliest.IsZero() {
			t.Fatalf("rules %d: a window at a free instant got %+v", rules, hit)
		}
	}
}

// clone is a deep copy of a ledger's slices, for comparing before and
// after.
func clone(l Ledger) Ledger {
	c := l
	c.Grants = append([]Grant(nil), l.Grants...)
	c.Days = append([]DayCount(nil), l.Days...)
	c.Waiting = append([]Waiting(nil), l.Waiting...)
	c.Chains = append([]string(nil), l.Chains...)
	return c
}
