package kis

import (
	"net/http"
	"net/url"
	"time"

	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/synth"
)

// pageRows is how many output2 rows one chart call returns at most.
const pageRows = 50

// maxCursors bounds the remembered tr_cont paging positions.
const maxCursors = 10000

// inputError is the answer to a missing or malformed query field (HTTP
// 200, rt_cd "1": check the body, not the status).
func inputError(field string) *simulator.Reply {
	return gatewayError(http.StatusOK, "OPSQ2001", "입력 필드 값이 올바르지 않습니다.("+field+")", "error")
}

// chart answers a daily/weekly/monthly/yearly chart call: output1 (the
// latest quote) and output2 (newest first, at most pageRows rows), paged
// with the tr_cont headers.
func (p *provider) chart(r *http.Request, rt simulator.Route, in *simulator.Instance, trID string, now time.Time) *simulator.Reply {
	q := r.URL.Query()
	cq, rep := parseChartQuery(q)
	if rep != nil {
		return rep
	}
	inst := instrumentFor(p.h.Seed(), trID, cq.div, cq.iscd, rt.Dataset)
	hi := min(cq.d2, synth.Latest(inst.cal, now, in.Provider().Location, inst.lag, inst.hour))
	lo := max(cq.d1, inst.start)
	var periods []period
	if lo <= hi {
		periods = periodsNewestFirst(inst.cal, lo, hi, cq.period)
	}
	cursorKey := in.Provider().ID + "|" + trID + "|" + rt.Path + "?" + q.Encode()
	offset, end, trCont := p.page(cursorKey, r.Header.Get("tr_cont") == "N", len(periods))

	overseas := trID == "FHKST03030100"
	w := simulator.NewJSON(512 + 200*(end-offset))
	w.Open('{')
	w.Key("output1")
	writeOutput1(w, inst, hi, overseas, cq.iscd)
	w.Key("output2")
	writeOutput2(w, inst, periods[offset:end], overseas)
	w.KStr("rt_cd", "0")
	w.KStr("msg_cd", "MCA00000")
	w.KStr("msg1", "정상처리 되었습니다.")
	w.Close('}')
	rep = simulator.NewReply(http.StatusOK, ctJSON, w.Bytes(), "ok")
	rep.Header.Set("tr_id", trID)
	rep.Header.Set("tr_cont", trCont)
	return rep
}

// chartQuery is the query of a chart call.
type chartQuery struct {
	div, iscd string    // FID_COND_MRKT_DIV_CODE, FID_INPUT_ISCD
	d1, d2    synth.Day // FID_INPUT_DATE_1, FID_INPUT_DATE_2
	period    string    // FID_PERIOD_DIV_CODE: D, W, M or Y
}

// parseChartQuery reads a chart call's query, or answers inputError for
// the first missing or malformed field.
func parseChartQuery(q url.Values) (chartQuery, *simulator.Reply) {
	var cq chartQuery
	cq.div, cq.iscd = q.Get("FID_COND_MRKT_DIV_CODE"), q.Get("FID_INPUT_ISCD")
	if cq.div == "" {
		return cq, inputError("FID_COND_MRKT_DIV_CODE")
	}
	if cq.iscd == "" {
		return cq, inputError("FID_INPUT_ISCD")
	}
	var ok bool
	if cq.d1, ok = synth.ParseYYYYMMDD(q.Get("FID_INPUT_DATE_1")); !ok {
		return cq, inputError("FID_INPUT_DATE_1")
	}
	if cq.d2, ok = synth.ParseYYYYMMDD(q.Get("FID_INPUT_DATE_2")); !ok {
		return cq, inputError("FID_INPUT_DATE_2")
	}
	cq.period = q.Get("FID_PERIOD_DIV_CODE")
	switch cq.period {
	case "D", "W", "M", "Y":
	default:
		return cq, inputError("FID_PERIOD_DIV_CODE")
	}
	return cq, nil
}

// page is tr_cont paging: a request with tr_cont N (cont) continues where
// the last answer to the same query (cursorKey) left off. It returns the
// rows [offset, end) of n to answer and the tr_cont header of the answer:
// F first of several, M middle, E last of several, D the only one.
func (p *provider) page(cursorKey string, cont bool, n int) (offset, end int, trCont string) {
	var more bool
	p.h.Locked(func() {
		if cont {
			offset = p.cursors[cursorKey]
		}
		if offset > n {
			offset = n
		}
		end = min(offset+pageRows, n)
		more = end < n
		if more {
			if len(p.cursors) >= maxCursors {
				p.cursors = map[string]int{}
			}
			p.cursors[cursorKey] = end
		} else {
			delete(p.cursors, cursorKey)
		}
	})
	trCont = "D"
	switch {
	case more && offset == 0:
		trCont = "F"
	case more:
		trCont = "M"
	case offset > 0:
		trCont = "E"
	}
	return offset, end, trCont
}

// writeOutput1 writes output1, the latest quote up to hi (an empty object
// when the instrument has no trading day by then).
func writeOutput1(w *simulator.JSON, inst *instrument, hi synth.Day, overseas bool, iscd string) {
	last := hi
	for i := 0; i < 40 && last >= inst.start && !inst.cal.Open(last); i++ {
		last--
	}
	if last < inst.start {
		w.Open('{')
		w.Close('}')
		return
	}
	cur, prev := inst.bar(last), inst.bar(inst.cal.Prev(last))
	if overseas {
		writeOverseasOutput1(w, inst, cur, prev, iscd)
	} else {
		writeIndexOutput1(w, inst, cur, prev, iscd)
	}
}

// writeOutput2 writes output2, one bar a period.
func writeOutput2(w *simulator.JSON, inst *instrument, periods []period, overseas bool) {
	w.Open('[')
	for _, pd := range periods {
		b := inst.periodBar(pd)
		w.Open('{')
		w.KStr("stck_bsop_date", pd.last.YYYYMMDD())
		if overseas {
			w.KStr("ovrs_nmix_prpr", simulator.FormatFixed(b.Close, inst.dec))
			w.KStr("ovrs_nmix_oprc", simulator.FormatFixed(b.Open, inst.dec))
			w.KStr("ovrs_nmix_hgpr", simulator.FormatFixed(b.High, inst.dec))
			w.KStr("ovrs_nmix_lwpr", simulator.FormatFixed(b.Low, inst.dec))
			w.KStr("acml_vol", simulator.FormatAmount(inst.volBase*b.Volume))
		} else {
			w.KStr("bstp_nmix_prpr", simulator.FormatFixed(b.Close, inst.dec))
			w.KStr("bstp_nmix_oprc", simulator.FormatFixed(b.Open, inst.dec))
			w.KStr("bstp_nmix_hgpr", simulator.FormatFixed(b.High, inst.dec))
			w.KStr("bstp_nmix_lwpr", simulator.FormatFixed(b.Low, inst.dec))
			w.KStr("acml_vol", simulator.FormatAmount(inst.volBase*b.Volume))
			w.KStr("acml_tr_pbmn", simulator.FormatAmount(inst.amtBase*b.Volume*b.Close/inst.series.Base()))
		}
		w.KStr("mod_yn", "N")
		w.Close('}')
	}
	w.Close(']')
}

// changeSign is KIS's prdy_vrss_sign: 2 up, 3 unchanged, 5 down.
func changeSign(diff float64) string {
	switch {
	case diff > 0:
		return "2"
	case diff < 0:
		return "5"
	}
	return "3"
}

// change returns a bar's close and the previous bar's, rounded as the
// instrument quotes them, and the difference.
func change(in *instrument, cur, prev synth.Bar) (c, p, diff float64) {
	c, p = simulator.Round(cur.Close, in.dec), simulator.Round(prev.Close, in.dec)
	return c, p, c - p
}

// writeRange writes the previous day's volume and the day's open, high
// and low, their keys under the endpoint's prefix (bstp_nmix_oprc,
// ovrs_prod_oprc, …).
func writeRange(w *simulator.JSON, in *instrument, cur, prev synth.Bar, prefix string) {
	w.KStr("prdy_vol", simulator.FormatAmount(in.volBase*prev.Volume))
	w.KStr(prefix+"oprc", simulator.FormatFixed(cur.Open, in.dec))
	w.KStr(prefix+"hgpr", simulator.FormatFixed(cur.High, in.dec))
	w.KStr(prefix+"lwpr", simulator.FormatFixed(cur.Low, in.dec))
}

func writeIndexOutput1(w *simulator.JSON, in *instrument, cur, prev synth.Bar, iscd string) {
	c, p, diff := change(in, cur, prev)
	w.Open('{')
	w.KStr("bstp_nmix_prpr", simulator.FormatFixed(c, in.dec))
	w.KStr("bstp_nmix_prdy_vrss", simulator.FormatFixed(diff, in.dec))
	w.KStr("prdy_vrss_sign", changeSign(diff))
	w.KStr("bstp_nmix_prdy_ctrt", simulator.FormatFixed(100*diff/p, 2))
	w.KStr("prdy_nmix", simulator.FormatFixed(p, in.dec))
	w.KStr("acml_vol", simulator.FormatAmount(in.volBase*cur.Volume))
	w.KStr("acml_tr_pbmn", simulator.FormatAmount(in.amtBase*cur.Volume*cur.Close/in.series.Base()))
	w.KStr("hts_kor_isnm", in.name)
	w.KStr("bstp_cls_code", iscd)
	writeRange(w, in, cur, prev, "bstp_nmix_")
	w.Close('}')
}

func writeOverseasOutput1(w *simulator.JSON, in *instrument, cur, prev synth.Bar, iscd string) {
	c, p, diff := change(in, cur, prev)
	w.Open('{')
	w.KStr("ovrs_nmix_prdy_vrss", simulator.FormatFixed(diff, in.dec))
	w.KStr("prdy_vrss_sign", changeSign(diff))
	w.KStr("prdy_ctrt", simulator.FormatFixed(100*diff/p, 2))
	w.KStr("ovrs_nmix_prdy_clpr", simulator.FormatFixed(p, in.dec))
	w.KStr("acml_vol", simulator.FormatAmount(in.volBase*cur.Volume))
	w.KStr("hts_kor_isnm", in.name)
	w.KStr("ovrs_nmix_prpr", simulator.FormatFixed(c, in.dec))
	w.KStr("stck_shrn_iscd", iscd)
	writeRange(w, in, cur, prev, "ovrs_prod_")
	w.Close('}')
}
