package ecos

import "github.com/sluicehq/sluice/wire"

// MaxRows is the most rows one StatisticSearch call may ask for
// (endRow − startRow + 1); more is ERROR-400.
const MaxRows = 100000

// Spec is what the ECOS connector declares about the ECOS wire: a dataset
// names its statistic and cycle (and up to four items); rows are asked by
// startRow/endRow path segments, the range is the {from}/{to} segments
// written per cycle (FormatDate), and the answer's rows are
// StatisticSearch.row, oldest first, dated by TIME in the cycle's format,
// with the value in DATA_VALUE.
var Spec = wire.Spec{
	Connector: "ecos",
	Fields: wire.Fields{
		Required: []string{"stat_code", "cycle"},
		Allowed:  []string{"stat_code", "cycle", "items", "format", "page_size"},
	},
	Paging: wire.Paging{Style: wire.RowRange, Controls: []string{"startRow", "endRow"}, DefaultRows: DefaultPageSize, MaxRows: MaxRows, Sizable: true},
	Dates: wire.Dates{
		From: "from", To: "to", // path segments after STAT_CODE/CYCLE
		CycleField: "cycle",
		Cycles: []wire.Cycle{
			{Code: "A", Unit: wire.Year, Format: wire.YYYY},
			{Code: "S", Unit: wire.HalfYear, Format: wire.YYYYSn},
			{Code: "Q", Unit: wire.Quarter, Format: wire.YYYYQn},
			{Code: "M", Unit: wire.Month, Format: wire.YYYYMM},
			{Code: "SM", Unit: wire.HalfMonth, Format: wire.YYYYMMSn},
			{Code: "D", Unit: wire.Day, Format: wire.YYYYMMDD},
		},
	},
	// A year of any cycle (366 daily rows at most) fits one page of the
	// default 1,000 rows.
	Coverage: wire.Coverage{Align: wire.Year},
	Rows: wire.Rows{
		JSON:   "StatisticSearch.row",
		XML:    "StatisticSearch.row",
		Period: "TIME", // in the cycle's format
		Keys:   []string{"ITEM_CODE1", "ITEM_CODE2", "ITEM_CODE3", "ITEM_CODE4"},
		Values: []string{"DATA_VALUE"},
	},
}
