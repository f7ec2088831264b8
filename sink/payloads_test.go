package sink

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"
)

// Realistic provider payloads (field names and shapes from
// the providers' wire facts in docs/providers.md) for the compression figures and tests.

type kisOutput1 struct {
	BstpNmixPrpr     string `json:"bstp_nmix_prpr"`
	BstpNmixPrdyVrss string `json:"bstp_nmix_prdy_vrss"`
	PrdyVrssSign     string `json:"prdy_vrss_sign"`
	BstpNmixPrdyCtrt string `json:"bstp_nmix_prdy_ctrt"`
	PrdyNmix         string `json:"prdy_nmix"`
	AcmlVol          string `json:"acml_vol"`
	AcmlTrPbmn       string `json:"acml_tr_pbmn"`
	HtsKorIsnm       string `json:"hts_kor_isnm"`
	BstpClsCode      string `json:"bstp_cls_code"`
	PrdyVol          string `json:"prdy_vol"`
	BstpNmixOprc     string `json:"bstp_nmix_oprc"`
	BstpNmixHgpr     string `json:"bstp_nmix_hgpr"`
	BstpNmixLwpr     string `json:"bstp_nmix_lwpr"`
}

type kisRow struct {
	StckBsopDate string `json:"stck_bsop_date"`
	BstpNmixPrpr string `json:"bstp_nmix_prpr"`
	BstpNmixOprc string `json:"bstp_nmix_oprc"`
	BstpNmixHgpr string `json:"bstp_nmix_hgpr"`
	BstpNmixLwpr string `json:"bstp_nmix_lwpr"`
	AcmlVol      string `json:"acml_vol"`
	AcmlTrPbmn   string `json:"acml_tr_pbmn"`
	ModYn        string `json:"mod_yn"`
}

type kisChart struct {
	RtCd    string     `json:"rt_cd"`
	MsgCd   string     `json:"msg_cd"`
	Msg1    string     `json:"msg1"`
	Output1 kisOutput1 `json:"output1"`
	Output2 []kisRow   `json:"output2"`
}

// businessDays returns n weekdays ending at end, newest first.
func businessDays(end time.Time, n int) []time.Time {
	var days []time.Time
	for d := end; len(days) < n; d = d.AddDate(0, 0, -1) {
		if wd := d.Weekday(); wd != time.Saturday && wd != time.Sunday {
			days = append(days, d)
		}
	}
	return days
}

func price(v float64) string { return fmt.Sprintf("%.2f", v) }

// kisDailyIndexChart is a KIS inquire-daily-indexchartprice answer with
// rows daily rows (newest first), as the KOSPI index would return it.
func kisDailyIndexChart(rows int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	level := 2600 + rng.Float64()*200
	var out []kisRow
	for _, d := range businessDays(time.Date(2025, 1, 31, 0, 0, 0, 0, time.UTC), rows) {
		o := level + rng.NormFloat64()*8
		h := max(o, level) + rng.Float64()*15
		l := min(o, level) - rng.Float64()*15
		out = append(out, kisRow{
			StckBsopDate: d.Format("20060102"),
			BstpNmixPrpr: price(level),
			BstpNmixOprc: price(o),
			BstpNmixHgpr: price(h),
			BstpNmixLwpr: price(l),
			AcmlVol:      fmt.Sprint(300000 + rng.IntN(400000)),
			AcmlTrPbmn:   fmt.Sprint(6000000 + rng.IntN(9000000)),
			ModYn:        "N",
		})
		level = o + rng.NormFloat64()*20
	}
	first := out[0]
	body, _ := json.Marshal(kisChart{
		RtCd: "0", MsgCd: "MCA00000", Msg1: "정상처리 되었습니다.",
		Output1: kisOutput1{
			BstpNmixPrpr: first.BstpNmixPrpr, BstpNmixPrdyVrss: "-12.34", PrdyVrssSign: "5",
			BstpNmixPrdyCtrt: "-0.47", PrdyNmix: out[1].BstpNmixPrpr, AcmlVol: first.AcmlVol,
			AcmlTrPbmn: first.AcmlTrPbmn, HtsKorIsnm: "종합", BstpClsCode: "0001", PrdyVol: out[1].AcmlVol,
			BstpNmixOprc: first.BstpNmixOprc, BstpNmixHgpr: first.BstpNmixHgpr, BstpNmixLwpr: first.BstpNmixLwpr,
		},
		Output2: out,
	})
	return body
}

type ecosRow struct {
	StatCode  string  `json:"STAT_CODE"`
	StatName  string  `json:"STAT_NAME"`
	ItemCode1 string  `json:"ITEM_CODE1"`
	ItemName1 string  `json:"ITEM_NAME1"`
	ItemCode2 *string `json:"ITEM_CODE2"`
	ItemName2 *string `json:"ITEM_NAME2"`
	ItemCode3 *string `json:"ITEM_CODE3"`
	ItemName3 *string `json:"ITEM_NAME3"`
	ItemCode4 *string `json:"ITEM_CODE4"`
	ItemName4 *string `json:"ITEM_NAME4"`
	UnitName  string  `json:"UNIT_NAME"`
	Wgt       *string `json:"WGT"`
	Time      string  `json:"TIME"`
	DataValue string  `json:"DATA_VALUE"`
}

// ecosStatisticSearch is an ECOS StatisticSearch answer for a daily
// market-rate series with rows rows.
func ecosStatisticSearch(rows int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 2))
	v := 3.5
	days := businessDays(time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC), rows)
	var out []ecosRow
	for i := len(days) - 1; i >= 0; i-- {
		v += rng.NormFloat64() * 0.01
		out = append(out, ecosRow{
			StatCode: "817Y002", StatName: "1.3.2.2. 시장금리(일별)",
			ItemCode1: "010200000", ItemName1: "국고채(3년)",
			UnitName: "연%", Time: days[i].Format("20060102"), DataValue: fmt.Sprintf("%.3f", v),
		})
	}
	body, _ := json.Marshal(map[string]any{"StatisticSearch": map[string]any{
		"list_total_count": rows, "row": out,
	}})
	return body
}

type fredObs struct {
	RealtimeStart string `json:"realtime_start"`
	RealtimeEnd   string `json:"realtime_end"`
	Date          string `json:"date"`
	Value         string `json:"value"`
}

type fredAnswer struct {
	RealtimeStart    string    `json:"realtime_start"`
	RealtimeEnd      string    `json:"realtime_end"`
	ObservationStart string    `json:"observation_start"`
	ObservationEnd   string    `json:"observation_end"`
	Units            string    `json:"units"`
	OutputType       int       `json:"output_type"`
	FileType         string    `json:"file_type"`
	OrderBy          string    `json:"order_by"`
	SortOrder        string    `json:"sort_order"`
	Count            int       `json:"count"`
	Offset           int       `json:"offset"`
	Limit            int       `json:"limit"`
	Observations     []fredObs `json:"observations"`
}

// fredObservations is a FRED series/observations answer (DGS10-like) with
// rows observations, a few of them missing (".").
func fredObservations(rows int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 3))
	v := 4.0
	days := businessDays(time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC), rows)
	var obs []fredObs
	for i := len(days) - 1; i >= 0; i-- {
		v += rng.NormFloat64() * 0.03
		val := fmt.Sprintf("%.2f", v)
		if rng.IntN(40) == 0 {
			val = "."
		}
		obs = append(obs, fredObs{RealtimeStart: "2025-01-02", RealtimeEnd: "2025-01-02",
			Date: days[i].Format(time.DateOnly), Value: val})
	}
	body, _ := json.Marshal(fredAnswer{
		RealtimeStart: "2025-01-02", RealtimeEnd: "2025-01-02",
		ObservationStart: obs[0].Date, ObservationEnd: obs[len(obs)-1].Date,
		Units: "lin", OutputType: 1, FileType: "json", OrderBy: "observation_date", SortOrder: "asc",
		Count: rows, Limit: 100000, Observations: obs,
	})
	return body
}
