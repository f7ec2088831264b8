package fred

import "github.com/sluicehq/sluice/wire"

// Spec is what the FRED connector declares about the FRED wire: a dataset
// names its series; one call answers up to 100,000 observations
// (limit/offset), the range is observation_start/observation_end
// (YYYY-MM-DD, both included), and the rows are observations (JSON) or
// observations.observation elements whose date and value are attributes
// (XML). A missing value is ".". FRED series are daily, weekly, monthly or
// quarterly and the registry does not say which: the cycle is a day, the
// finest, so a plan never undercounts rows.
var Spec = wire.Spec{
	Connector: "fred",
	Fields: wire.Fields{
		Required: []string{"series_id"},
		Allowed:  []string{"series_id", "params", "format"},
	},
	Paging: wire.Paging{Style: wire.Offset, Controls: []string{"limit", "offset"}, DefaultRows: maxLimit, MaxRows: maxLimit},
	Dates: wire.Dates{
		From: "observation_start", To: "observation_end",
		Cycles: []wire.Cycle{{Unit: wire.Day, Format: wire.ISODate}},
	},
	// A year of daily observations is one call of up to 100,000.
	Coverage: wire.Coverage{Align: wire.Year},
	Rows: wire.Rows{
		JSON:         "observations",
		XML:          "observations.observation",
		Period:       "date",
		PeriodFormat: wire.ISODate,
		Values:       []string{"value"},
	},
}
