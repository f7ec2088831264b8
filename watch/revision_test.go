package watch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/wire"
)

func row(period string, keys []string, values ...string) wire.Row {
	r := wire.Row{Period: period, Keys: keys, Values: map[string]string{}}
	for i := 0; i+1 < len(values); i += 2 {
		r.Values[values[i]] = values[i+1]
	}
	return r
}

func TestRevisionsOf(t *testing.T) {
	// Yesterday's look-back held the 25th to the 27th; today's holds the
	// 26th to the 28th.
	old := []wire.Row{
		row("20261125", nil, "v", "1.0"),
		row("20261126", nil, "v", "1.50"),
		row("20261127", nil, "v", "."),
	}
	new := []wire.Row{
		row("20261126", nil, "v", "1.5"),  // the same value, written otherwise
		row("20261127", nil, "v", "4.10"), // FRED's missing value filled in
		row("20261128", nil, "v", "4.2"),  // only in the new object
	}
	got, omitted := RevisionsOf(t0, "fred-dgs10", Daily, old, new)
	if omitted != 0 || len(got) != 1 {
		t.Fatalf("got %+v, omitted %d", got, omitted)
	}
	c := got[0]
	if c.Kind != ChangeRevision || c.Period != "2026-11-27" || c.From != "." || c.To != "4.10" || c.Dataset != "fred-dgs10" || !c.At.Equal(t0) ||
		c.Summary != "fred-dgs10 revised 2026-11-27: . → 4.10" {
		t.Errorf("change %+v", c)
	}
}

func TestRevisionsOfKeyedRows(t *testing.T) {
	// data.go.kr: one row per index and day, several value fields.
	old := []wire.Row{
		row("20261127", []string{"코스피", ""}, "clpr", "2501.20", "vs", "3.1"),
		row("20261127", []string{"코스닥", ""}, "clpr", "690.1", "vs", "-1"),
	}
	new := []wire.Row{
		row("20261127", []string{"코스닥", ""}, "clpr", "690.1", "vs", "-1.0"),
		row("20261127", []string{"코스피", ""}, "clpr", "2503", "vs", "3.1"),
		row("20261127", []string{"코스피", ""}, "clpr", "9999", "vs", "0"), // a duplicate row: the first counts
	}
	got, _ := RevisionsOf(t0, "fsc-stock-market-index", Daily, old, new)
	if len(got) != 1 {
		t.Fatalf("got %+v", got)
	}
	if c := got[0]; c.Period != "2026-11-27" || c.From != "2501.20" || c.To != "2503" ||
		c.Summary != "fsc-stock-market-index revised 2026-11-27 [코스피] clpr: 2501.20 → 2503" {
		t.Errorf("change %+v", c)
	}

	// A value that disappears is revised to "".
	gone, _ := RevisionsOf(t0, "ds", "", []wire.Row{row("2026Q3", nil, "a", "1", "b", "2")}, []wire.Row{row("2026Q3", nil, "a", "1")})
	if len(gone) != 1 || gone[0].From != "2" || gone[0].To != "" || gone[0].Period != "2026Q3" || !strings.Contains(gone[0].Summary, `2026Q3 b: 2 → ""`) {
		t.Errorf("vanished value: %+v", gone)
	}
}

func TestRevisionsOfIsBounded(t *testing.T) {
	var old, new []wire.Row
	for i := range MaxRevisions + 5 {
		p := fmt.Sprintf("%04d", 1800+i)
		old = append(old, row(p, nil, "v", "1"))
		new = append(new, row(p, nil, "v", "2"))
	}
	got, omitted := RevisionsOf(t0, "ds", Annual, old, new)
	if len(got) != MaxRevisions || omitted != 5 {
		t.Fatalf("%d changes, %d omitted", len(got), omitted)
	}
	if got[0].Period != "1800" || !strings.HasSuffix(got[len(got)-1].Summary, "(and 5 more revised values not recorded)") {
		t.Errorf("first %+v last %+v", got[0], got[len(got)-1])
	}
	if none, n := RevisionsOf(t0, "ds", Annual, old, old); len(none) != 0 || n != 0 {
		t.Errorf("identical rows: %v %d", none, n)
	}
}
