package kis

import "github.com/sluicehq/sluice/wire"

// PageRows is how many output2 rows one chart call answers at most; the
// next rows come with tr_cont: N.
const PageRows = 50

// Spec is what the KIS connector declares about the KIS wire: a dataset
// names its path and tr_id; a chart answer holds at most PageRows rows in
// output2, newest first, dated by stck_bsop_date, and pages by tr_cont;
// the range is the dataset's FID_INPUT_DATE_1/FID_INPUT_DATE_2 parameters
// ({from}/{to}) and FID_PERIOD_DIV_CODE picks daily, weekly, monthly or
// yearly rows (each dated on the period's last trading day).
var Spec = wire.Spec{
	Connector: "kis",
	Fields: wire.Fields{
		Required: []string{"path", "tr_id"},
		Allowed:  []string{"method", "path", "tr_id", "params", "format"},
	},
	Paging: wire.Paging{Style: wire.Continuation, Controls: []string{"tr_cont"}, DefaultRows: PageRows, MaxRows: PageRows},
	Dates: wire.Dates{
		From: "FID_INPUT_DATE_1", To: "FID_INPUT_DATE_2", InParams: true,
		CycleField: "params.FID_PERIOD_DIV_CODE",
		Cycles: []wire.Cycle{
			{Code: "D", Unit: wire.Day, Format: wire.YYYYMMDD},
			{Code: "W", Unit: wire.Week, Format: wire.YYYYMMDD},
			{Code: "M", Unit: wire.Month, Format: wire.YYYYMMDD},
			{Code: "Y", Unit: wire.Year, Format: wire.YYYYMMDD},
		},
	},
	// Two months of daily bars are at most 46 weekdays: one page of 50.
	Coverage: wire.Coverage{Align: wire.Month, Periods: 2, Weekdays: true},
	Rows: wire.Rows{
		JSON:         "output2",
		Period:       "stck_bsop_date",
		PeriodFormat: wire.YYYYMMDD,
		// Domestic index charts (FHKUP03500100) carry bstp_nmix_*,
		// overseas ones (FHKST03030100) ovrs_nmix_*; a row has one set.
		Values: []string{
			"bstp_nmix_prpr", "bstp_nmix_oprc", "bstp_nmix_hgpr", "bstp_nmix_lwpr",
			"ovrs_nmix_prpr", "ovrs_nmix_oprc", "ovrs_nmix_hgpr", "ovrs_nmix_lwpr",
			"acml_vol", "acml_tr_pbmn",
		},
		NewestFirst: true,
	},
}
