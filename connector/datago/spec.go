package datago

import "github.com/sluicehq/sluice/wire"

// Spec is what the data.go.kr connector declares about the portal's wire:
// a dataset names its service path and parameters, whose {from}/{to}
// placeholders carry the range (basDt={from} alone asks one day a call);
// pages are pageNo/numOfRows (the portal states no maximum); the rows are
// response.body.items.item, an array or, for a single row, an object. The
// row facts are those of the FSC 시세 services (dated by basDt, one row an
// index: idxNm or itmsNm); a service that answers otherwise overrides them
// in its dataset's rows block.
var Spec = wire.Spec{
	Connector: "datago",
	Fields: wire.Fields{
		Required: []string{"path"},
		Allowed:  []string{"method", "path", "params", "format", "page_size"},
	},
	Paging: wire.Paging{Style: wire.PageNumber, Controls: []string{"pageNo", "numOfRows"}, DefaultRows: DefaultPageSize, Sizable: true},
	Dates: wire.Dates{
		InParams: true,
		Cycles:   []wire.Cycle{{Unit: wire.Day, Format: wire.YYYYMMDD}},
	},
	// A range of days is answered row by row across pages of numOfRows;
	// a year a chunk keeps the pages of a long range few. The FSC
	// services have rows on KRX business days only; a dataset declares
	// how many rows a day holds (one an index) in its coverage block.
	Coverage: wire.Coverage{Align: wire.Year, Weekdays: true},
	Rows: wire.Rows{
		JSON:         "response.body.items.item",
		XML:          "response.body.items.item",
		Period:       "basDt",
		PeriodFormat: wire.YYYYMMDD,
		Keys:         []string{"idxNm", "itmsNm"},
		Values:       []string{"clpr", "vs", "fltRt", "mkp", "hipr", "lopr"},
	},
}
