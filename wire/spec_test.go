package wire

import (
	"strings"
	"testing"
)

func testSpec() Spec {
	return Spec{
		Connector: "wiretest",
		Fields:    Fields{Required: []string{"stat_code"}, Allowed: []string{"stat_code", "cycle", "page_size"}},
		Paging:    Paging{Style: RowRange, Controls: []string{"startRow", "endRow"}, DefaultRows: 1000, MaxRows: 100000, Sizable: true},
		Dates: Dates{CycleField: "cycle", Cycles: []Cycle{
			{Code: "D", Unit: Day, Format: YYYYMMDD}, {Code: "M", Unit: Month, Format: YYYYMM}}},
		Rows: Rows{JSON: "a.row", Period: "TIME", Keys: []string{"K"}, Values: []string{"V"}},
	}
}

func TestResolve(t *testing.T) {
	s := testSpec()
	f, err := s.Resolve("M", 50, "", Override{Values: []string{"W"}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Cycle.Unit != Month || f.Rows.PeriodFormat != YYYYMM || f.PageRows != 50 || f.Span != SpanRange ||
		f.Rows.Values[0] != "W" || f.Rows.Keys[0] != "K" || f.Connector != "wiretest" {
		t.Errorf("facts %+v", f)
	}
	f.Paging.Controls[0] = "changed"
	f.Dates.Cycles[0].Code = "changed"
	if s.Paging.Controls[0] != "startRow" || s.Dates.Cycles[0].Code != "D" {
		t.Error("Resolve shares slices with the spec")
	}
	if f, _ := s.Resolve("", 0, SpanSingle, Override{PeriodFormat: ISODate}); f.Cycle.Code != "D" || f.PageRows != 1000 || f.Rows.PeriodFormat != ISODate || f.Span != SpanSingle {
		t.Errorf("defaults %+v", f)
	}
	if _, err := s.Resolve("SM", 0, "", Override{}); err == nil || err.Error() != `invalid value "SM" (allowed: D, M)` {
		t.Errorf("unknown cycle: %v", err)
	}
	s.Paging.Sizable = false
	if f, _ := s.Resolve("", 70, "", Override{}); f.PageRows != 1000 {
		t.Errorf("page size of a provider that decides: %d", f.PageRows)
	}
}

func TestCheckAndRegister(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Connector = "" }, "no connector name"},
		{func(s *Spec) { s.Fields.Required = append(s.Fields.Required, "market") }, `required field "market"`},
		{func(s *Spec) { s.Paging.Style = "scroll" }, `unknown paging style "scroll"`},
		{func(s *Spec) { s.Paging.DefaultRows = 0 }, "default rows 0"},
		{func(s *Spec) { s.Paging.DefaultRows = 200000 }, "default rows 200000"},
		{func(s *Spec) { s.Dates.Cycles[1].Format = "MM" }, `cycle "M": unknown format "MM"`},
		{func(s *Spec) { s.Rows.Period = "" }, "no period field"},
		{func(s *Spec) { s.Rows.PeriodFormat = "x" }, `unknown period format "x"`},
	} {
		s := testSpec()
		tc.edit(&s)
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check = %v, want %q", err, tc.want)
		}
	}
	s := testSpec()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	Register(s)
	got, ok := Lookup("wiretest")
	if !ok || got.Connector != "wiretest" || !strings.Contains(strings.Join(Registered(), ","), "wiretest") {
		t.Errorf("Lookup = %+v %v, Registered = %v", got, ok, Registered())
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("Lookup of an unregistered connector")
	}
	defer func() {
		if recover() == nil {
			t.Error("registering twice did not panic")
		}
	}()
	Register(s)
}
