package upbit

import "github.com/sluicehq/sluice/wire"

// Spec is what the UPBIT connector declares about the UPBIT wire: a
// dataset names its market (and path, daily candles by default); one call
// answers at most MaxCount candles ending before to (exclusive), newest
// first, a top-level JSON array dated by candle_date_time_utc (UTC candle
// days); the next page ends where the oldest candle starts.
var Spec = wire.Spec{
	Connector: "upbit",
	Fields: wire.Fields{
		Required: []string{"market"},
		Allowed:  []string{"path", "market", "params"},
	},
	Paging: wire.Paging{Style: wire.Cursor, Controls: []string{"to", "count"}, DefaultRows: MaxCount, MaxRows: MaxCount},
	Dates: wire.Dates{
		To: "to", ToExclusive: true, // with count: the days in the range
		Cycles: []wire.Cycle{{Unit: wire.Day, Format: wire.ISODateTime}},
	},
	// 200 daily candles (MaxCount) are one call.
	Coverage: wire.Coverage{Align: wire.Day, Periods: MaxCount},
	Rows: wire.Rows{
		Period:       "candle_date_time_utc",
		PeriodFormat: wire.ISODateTime,
		Values: []string{"opening_price", "high_price", "low_price", "trade_price",
			"candle_acc_trade_price", "candle_acc_trade_volume"},
		NewestFirst: true,
	},
}
