package registry_test

import (
	"testing"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/wire"
)

// TestDefaultRegistry checks the registry built into the binary: the seed's
// 189 endpoints plus the data.go.kr datasets, passing its own budget gate
// and, every connector being linked (connector_test.go), each dataset's
// request validated against its connector's wire spec.
func TestDefaultRegistry(t *testing.T) {
	reg, err := registry.Default(testOpts())
	if err != nil {
		t.Fatalf("the default registry must pass its own gate:\n%v", err)
	}
	count := map[string]int{}
	for _, d := range reg.Datasets {
		count[d.Provider]++
	}
	want := map[string]int{"kis": 100, "ecos": 80, "fred": 4, "upbit": 5}
	for p, n := range want {
		if count[p] != n {
			t.Errorf("%s datasets = %d, want %d", p, count[p], n)
		}
	}
	if count["datago"] < 4 {
		t.Errorf("datago datasets = %d, want at least 4", count["datago"])
	}
	// At least three data.go.kr datasets share one 활용신청 scope.
	shared := 0
	for _, s := range reg.Scopes {
		if s.Provider.ID == "datago" && len(s.Datasets) > shared {
			shared = len(s.Datasets)
		}
	}
	if shared < 3 {
		t.Errorf("largest data.go.kr service scope holds %d datasets, want ≥ 3", shared)
	}
	for _, id := range []string{"fred-dgs2", "fred-dgs5", "fred-dgs10", "fred-dgs30"} {
		if reg.Dataset(id) == nil {
			t.Errorf("dataset %s missing", id)
		}
	}
	// Real identifiers from the seed: KOSPI 0001 with FHKUP03500100, ECOS
	// 722Y001, UPBIT KRW-BTC.
	found := map[string]bool{}
	for _, d := range reg.Datasets {
		r := d.Request
		if v, _ := r.Param("FID_INPUT_ISCD"); v == "0001" && r.TrID == "FHKUP03500100" {
			found["kospi"] = true
		}
		if r.StatCode == "722Y001" {
			found["ecos"] = true
		}
		if r.Market == "KRW-BTC" {
			found["upbit"] = true
		}
	}
	for _, k := range []string{"kospi", "ecos", "upbit"} {
		if !found[k] {
			t.Errorf("no %s dataset with the seed's identifier", k)
		}
	}
	for _, d := range reg.Datasets {
		if d.Request.Declared() && d.Wire == nil {
			t.Errorf("%s: no wire facts", d.ID)
		}
	}
}

// TestDefaultRegistryWireFacts checks the facts the default datasets
// resolve to: each connector's cycle, page size and row facts, and the
// data.go.kr services whose rows block overrides the connector's.
func TestDefaultRegistryWireFacts(t *testing.T) {
	reg, err := registry.Default(testOpts())
	if err != nil {
		t.Fatal(err)
	}
	facts := func(id string) *wire.Facts {
		t.Helper()
		ds := reg.Dataset(id)
		if ds == nil || ds.Wire == nil {
			t.Fatalf("%s: no dataset or no facts", id)
		}
		return ds.Wire
	}
	for _, tc := range []struct {
		id       string
		unit     wire.Unit
		format   wire.Format
		period   string
		pageRows int
		span     wire.Span
		value    string
	}{
		{"kis-index-0001-kospi", wire.Day, wire.YYYYMMDD, "stck_bsop_date", 50, wire.SpanRange, "bstp_nmix_prpr"},
		{"ecos-722y001-0101000", wire.Day, wire.YYYYMMDD, "TIME", 1000, wire.SpanRange, "DATA_VALUE"},
		{"fred-dgs10", wire.Day, wire.ISODate, "date", 100000, wire.SpanRange, "value"},
		{"upbit-krw-btc", wire.Day, wire.ISODateTime, "candle_date_time_utc", 200, wire.SpanRange, "opening_price"},
		{"fsc-stock-market-index", wire.Day, wire.YYYYMMDD, "basDt", 1000, wire.SpanRange, "clpr"},
		{"fsc-bond-market-index", wire.Day, wire.YYYYMMDD, "basDt", 1000, wire.SpanRange, "totBnfIdxClpr"},
		{"visitkorea-tourism", wire.Day, wire.YYYYMMDDhhmmss, "modifiedtime", 1000, wire.SpanNone, "title"},
	} {
		f := facts(tc.id)
		if f.Cycle.Unit != tc.unit || f.Rows.PeriodFormat != tc.format || f.Rows.Period != tc.period || f.PageRows != tc.pageRows ||
			f.Span != tc.span || len(f.Rows.Values) == 0 || f.Rows.Values[0] != tc.value {
			t.Errorf("%s: facts %+v", tc.id, *f)
		}
	}
	// The FSC services ask a range a call (beginBasDt..endBasDt), so a
	// daily run's ten-day look-back is the pages of its rows, one an
	// index a business day, not ten one-day calls.
	for id, want := range map[string]int{"fsc-stock-market-index": 2, "fsc-bond-market-index": 1, "fsc-derivative-market-index": 1} {
		ds := reg.Dataset(id)
		if got := ds.Ingest.CallsPerRun; got != want {
			t.Errorf("%s: calls_per_run %d, want %d (look-back %d × %d rows a day over %d rows a page)",
				id, got, want, ds.Ingest.LookBack, ds.Wire.Coverage.RowsPerPeriod, ds.Wire.PageRows)
		}
	}
	// Every ECOS cycle of the default registry resolves to its format.
	for _, ds := range reg.DatasetsOf("ecos") {
		want := map[string]wire.Format{"A": wire.YYYY, "Q": wire.YYYYQn, "M": wire.YYYYMM, "D": wire.YYYYMMDD}[ds.Request.Cycle]
		if ds.Wire.Rows.PeriodFormat != want || ds.Wire.Cycle.Code != ds.Request.Cycle {
			t.Errorf("%s cycle %s: facts %+v", ds.ID, ds.Request.Cycle, ds.Wire.Cycle)
		}
	}
}
