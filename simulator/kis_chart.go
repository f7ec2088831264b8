package simulator

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/simulator/synth"
)

// kisPageRows is how many output2 rows one chart call returns at most.
const kisPageRows = 50

// kisMaxCursors bounds the remembered tr_cont paging positions.
const kisMaxCursors = 10000

// kisInputError is the answer to a missing or malformed query field
// (HTTP 200, rt_cd "1": check the body, not the status).
func kisInputError(field string) *reply {
	return kisGatewayError(http.StatusOK, "OPSQ2001", "입력 필드 값이 올바르지 않습니다.("+field+")", "error")
}

// kisChart answers a daily/weekly/monthly/yearly chart call: output1 (the
// latest quote) and output2 (newest first, at most kisPageRows rows),
// paged with the tr_cont headers.
func (s *Simulator) kisChart(r *http.Request, rt route, ps *provState, trID string, now time.Time) *reply {
	q := r.URL.Query()
	div, iscd := q.Get("FID_COND_MRKT_DIV_CODE"), q.Get("FID_INPUT_ISCD")
	if div == "" {
		return kisInputError("FID_COND_MRKT_DIV_CODE")
	}
	if iscd == "" {
		return kisInputError("FID_INPUT_ISCD")
	}
	d1, ok := synth.ParseYYYYMMDD(q.Get("FID_INPUT_DATE_1"))
	if !ok {
		return kisInputError("FID_INPUT_DATE_1")
	}
	d2, ok := synth.ParseYYYYMMDD(q.Get("FID_INPUT_DATE_2"))
	if !ok {
		return kisInputError("FID_INPUT_DATE_2")
	}
	code := q.Get("FID_PERIOD_DIV_CODE")
	switch code {
	case "D", "W", "M", "Y":
	default:
		return kisInputError("FID_PERIOD_DIV_CODE")
	}
	in := s.kisInstrument(trID, div, iscd, rt.ds)
	hi := min(d2, latestDay(in.cal, now, ps.p.Location, in.lag, in.hour))
	lo := max(d1, in.start)
	var periods []period
	if lo <= hi {
		periods = periodsNewestFirst(in.cal, lo, hi, code)
	}

	// tr_cont paging: a request with tr_cont N continues where the last
	// answer to the same query left off.
	cursorKey := ps.p.ID + "|" + trID + "|" + rt.path + "?" + q.Encode()
	offset := 0
	s.mu.Lock()
	if r.Header.Get("tr_cont") == "N" {
		offset = s.kisCursors[cursorKey]
	}
	if offset > len(periods) {
		offset = len(periods)
	}
	end := min(offset+kisPageRows, len(periods))
	more := end < len(periods)
	if more {
		if len(s.kisCursors) >= kisMaxCursors {
			s.kisCursors = map[string]int{}
		}
		s.kisCursors[cursorKey] = end
	} else {
		delete(s.kisCursors, cursorKey)
	}
	s.mu.Unlock()
	trCont := "D"
	switch {
	case more && offset == 0:
		trCont = "F"
	case more:
		trCont = "M"
	case offset > 0:
		trCont = "E"
	}

	w := jw{b: make([]byte, 0, 512+200*(end-offset))}
	w.open('{')
	w.key("output1")
	// output1 is the latest quote up to FID_INPUT_DATE_2.
	last := hi
	for i := 0; i < 40 && last >= in.start && !in.cal.Open(last); i++ {
		last--
	}
	overseas := trID == "FHKST03030100"
	if last >= in.start {
		cur, prev := in.bar(last), in.bar(in.cal.Prev(last))
		if overseas {
			writeKISOverseasOutput1(&w, in, cur, prev, iscd)
		} else {
			writeKISIndexOutput1(&w, in, cur, prev, iscd)
		}
	} else {
		w.open('{')
		w.close('}')
	}
	w.key("output2")
	w.open('[')
	for _, p := range periods[offset:end] {
		b := in.periodBar(p)
		w.open('{')
		w.kstr("stck_bsop_date", p.last.YYYYMMDD())
		if overseas {
			w.kstr("ovrs_nmix_prpr", formatFixed(b.Close, in.dec))
			w.kstr("ovrs_nmix_oprc", formatFixed(b.Open, in.dec))
			w.kstr("ovrs_nmix_hgpr", formatFixed(b.High, in.dec))
			w.kstr("ovrs_nmix_lwpr", formatFixed(b.Low, in.dec))
			w.kstr("acml_vol", intString(in.volBase*b.Volume))
		} else {
			w.kstr("bstp_nmix_prpr", formatFixed(b.Close, in.dec))
			w.kstr("bstp_nmix_oprc", formatFixed(b.Open, in.dec))
			w.kstr("bstp_nmix_hgpr", formatFixed(b.High, in.dec))
			w.kstr("bstp_nmix_lwpr", formatFixed(b.Low, in.dec))
			w.kstr("acml_vol", intString(in.volBase*b.Volume))
			w.kstr("acml_tr_pbmn", intString(in.amtBase*b.Volume*b.Close/in.series.Base()))
		}
		w.kstr("mod_yn", "N")
		w.close('}')
	}
	w.close(']')
	w.kstr("rt_cd", "0")
	w.kstr("msg_cd", "MCA00000")
	w.kstr("msg1", "정상처리 되었습니다.")
	w.close('}')
	rep := newReply(http.StatusOK, ctJSON, w.b, "ok")
	rep.header.Set("tr_id", trID)
	rep.header.Set("tr_cont", trCont)
	return rep
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

func writeKISIndexOutput1(w *jw, in *instrument, cur, prev synth.Bar, iscd string) {
	c := roundTo(cur.Close, in.dec)
	p := roundTo(prev.Close, in.dec)
	diff := c - p
	w.open('{')
	w.kstr("bstp_nmix_prpr", formatFixed(c, in.dec))
	w.kstr("bstp_nmix_prdy_vrss", formatFixed(diff, in.dec))
	w.kstr("prdy_vrss_sign", changeSign(diff))
	w.kstr("bstp_nmix_prdy_ctrt", formatFixed(100*diff/p, 2))
	w.kstr("prdy_nmix", formatFixed(p, in.dec))
	w.kstr("acml_vol", intString(in.volBase*cur.Volume))
	w.kstr("acml_tr_pbmn", intString(in.amtBase*cur.Volume*cur.Close/in.series.Base()))
	w.kstr("hts_kor_isnm", in.name)
	w.kstr("bstp_cls_code", iscd)
	w.kstr("prdy_vol", intString(in.volBase*prev.Volume))
	w.kstr("bstp_nmix_oprc", formatFixed(cur.Open, in.dec))
	w.kstr("bstp_nmix_hgpr", formatFixed(cur.High, in.dec))
	w.kstr("bstp_nmix_lwpr", formatFixed(cur.Low, in.dec))
	w.close('}')
}

func writeKISOverseasOutput1(w *jw, in *instrument, cur, prev synth.Bar, iscd string) {
	c := roundTo(cur.Close, in.dec)
	p := roundTo(prev.Close, in.dec)
	diff := c - p
	w.open('{')
	w.kstr("ovrs_nmix_prdy_vrss", formatFixed(diff, in.dec))
	w.kstr("prdy_vrss_sign", changeSign(diff))
	w.kstr("prdy_ctrt", formatFixed(100*diff/p, 2))
	w.kstr("ovrs_nmix_prdy_clpr", formatFixed(p, in.dec))
	w.kstr("acml_vol", intString(in.volBase*cur.Volume))
	w.kstr("hts_kor_isnm", in.name)
	w.kstr("ovrs_nmix_prpr", formatFixed(c, in.dec))
	w.kstr("stck_shrn_iscd", iscd)
	w.kstr("prdy_vol", intString(in.volBase*prev.Volume))
	w.kstr("ovrs_prod_oprc", formatFixed(cur.Open, in.dec))
	w.kstr("ovrs_prod_hgpr", formatFixed(cur.High, in.dec))
	w.kstr("ovrs_prod_lwpr", formatFixed(cur.Low, in.dec))
	w.close('}')
}

func roundTo(v float64, dec int) float64 {
	p := math.Pow(10, float64(dec))
	return math.Round(v*p) / p
}

// intString formats a non-negative amount as an integer string.
func intString(v float64) string {
	if v < 0 || v != v {
		v = 0
	}
	return strconv.FormatInt(int64(math.Round(v)), 10)
}
