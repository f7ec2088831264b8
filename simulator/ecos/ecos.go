// Package ecos simulates the Bank of Korea ECOS Open API for the
// simulator: GET /api/StatisticSearch/{KEY}/{json|xml}/{kr|en}/{start}/
// {end}/{STAT}/{CYCLE}/{from}/{to}/{items…}, the registry provider found by
// its key. Errors and notices come in HTTP 200 as a RESULT envelope
// (INFO-100 bad key, INFO-200 no data, ERROR-602 over the limit, …).
// Rows are paged by start/end (at most 100,000 a call, ERROR-400 beyond);
// daily data appears the next day at 09:00 KST (KRX business days), other
// cycles some weeks after the period ends.
package ecos

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/synth"
)

const (
	ctJSON = "application/json;charset=UTF-8"
	ctXML  = "text/xml;charset=UTF-8"
)

// provider is the ECOS wire of one simulator.
type provider struct {
	simulator.Stateless
	h     *simulator.Host
	stats map[string][]*registry.Dataset // stat code → datasets
	serve simulator.Handler
}

func newProvider(h *simulator.Host) (simulator.Provider, error) {
	p := &provider{h: h, stats: simulator.Index(h.Datasets(), func(ds *registry.Dataset) string { return ds.Request.StatCode })}
	p.serve = p.statisticSearch
	return p, nil
}

func init() {
	// The test key is shaped like a real one: 20 upper-case letters and
	// digits.
	simulator.Register(simulator.Registration{Connector: "ecos", New: newProvider, Credential: simulator.Shaped(simulator.AlnumUpper, 20)})
}

// Route claims every path under /api/; the key segment tells the registry
// provider, the stat code and items the dataset.
func (p *provider) Route(r *http.Request) (simulator.Route, bool) {
	return p.h.Claim(r, func(path string) (simulator.Route, bool) {
		if !strings.HasPrefix(path, "/api/") {
			return simulator.Route{}, false
		}
		in := p.h.First()
		seg := strings.Split(strings.TrimPrefix(path, "/api/"), "/")
		if len(seg) > 1 {
			in = p.h.OwnerOr("api_key", seg[1], in)
		}
		var ds *registry.Dataset
		if len(seg) > 6 {
			ds = bestDataset(p.stats[seg[6]], in.Provider().ID, seg)
		}
		return simulator.Route{Instance: in, Dataset: ds, Path: path, LogPath: redactPath(path), Serve: p.serve}, true
	})
}

// redactPath removes the key segment.
func redactPath(path string) string {
	seg := strings.SplitN(strings.TrimPrefix(path, "/api/"), "/", 3)
	if len(seg) >= 2 {
		seg[1] = "REDACTED"
	}
	return "/api/" + strings.Join(seg, "/")
}

// bestDataset matches StatisticSearch path segments (service, key, type,
// lang, start, end, stat, cycle, from, to, items…) against ECOS datasets:
// same stat code, then the most matching cycle and item codes.
func bestDataset(cands []*registry.Dataset, prov string, seg []string) *registry.Dataset {
	var best *registry.Dataset
	bestScore := -1
	for _, ds := range cands {
		if ds.Provider != prov {
			continue
		}
		score := 0
		if len(seg) > 7 && seg[7] == ds.Request.Cycle {
			score += 10
		}
		for i, item := range ds.Request.Items {
			if len(seg) > 10+i && seg[10+i] == item {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = ds, score
		}
	}
	return best
}

// ECOS result codes and messages.
var messages = map[string]string{
	"INFO-100":  "인증키가 유효하지 않습니다. 인증키를 확인하십시오! 인증키가 없는 경우 인증키를 신청하십시오!",
	"INFO-200":  "해당하는 데이터가 없습니다.",
	"ERROR-100": "필수 값이 누락되어 있습니다. 필수 값을 확인하십시오! 필수 값이 없는 경우 요청인자를 참고 하십시오!",
	"ERROR-101": "주기와 다른 형식의 날짜 형식입니다.",
	"ERROR-200": "파일타입 값이 누락 혹은 유효하지 않습니다. 파일타입 값을 확인하십시오! 파일타입 값이 없는 경우 요청인자를 참고 하십시오!",
	"ERROR-300": "조회건수 값이 누락되어 있습니다. 조회시작건수/조회종료건수 값을 확인하십시오! 조회시작건수/조회종료건수 값이 없는 경우 요청인자를 참고 하십시오!",
	"ERROR-301": "조회건수 값의 타입이 유효하지 않습니다. 조회건수 값을 확인하십시오! 조회건수 값이 없는 경우 요청인자를 참고 하십시오!",
	"ERROR-400": "검색범위가 적정범위를 초과하여 60초 TIMEOUT이 발생하였습니다. 요청인자 값 조정하여 다시 요청하시기 바랍니다.",
	"ERROR-500": "서버 오류입니다. OpenAPI 호출시 서버에서 오류가 발생하였습니다. 해당 서비스를 찾을 수 없습니다.",
	"ERROR-600": "DB Connection 오류입니다. OpenAPI 호출시 서버에서 DB접속 오류가 발생했습니다.",
	"ERROR-601": "SQL 오류입니다. OpenAPI 호출시 서버에서 SQL 오류가 발생했습니다.",
	"ERROR-602": "과도한 OpenAPI호출로 이용이 제한되었습니다. 잠시후 이용해주시기 바랍니다.",
}

// maxRows is the most rows one StatisticSearch call may ask for.
const maxRows = 100000

// result is an ECOS error or notice: always HTTP 200.
func result(xml bool, code, outcome string) *simulator.Reply {
	msg := messages[code]
	if xml {
		b := []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<RESULT>\n")
		b = simulator.AppendXMLElem(b, "CODE", code)
		b = append(b, '\n')
		b = simulator.AppendXMLElem(b, "MESSAGE", msg)
		b = append(b, "\n</RESULT>\n"...)
		return simulator.NewReply(http.StatusOK, ctXML, b, outcome)
	}
	return simulator.JSONReply(http.StatusOK, ctJSON, outcome, func(w *simulator.JSON) {
		w.KObject("RESULT", func() { w.KStr("CODE", code); w.KStr("MESSAGE", msg) })
	})
}

// statisticSearch answers GET /api/StatisticSearch/{KEY}/{json|xml}/{kr|en}/
// {start}/{end}/{STAT}/{CYCLE}/{from}/{to}/{items…}.
func (p *provider) statisticSearch(r *http.Request, rt simulator.Route, fraction float64) *simulator.Reply {
	q, rep := p.parseSearch(r, rt, fraction)
	if rep != nil {
		return rep
	}
	if len(p.stats[q.stat]) == 0 {
		return result(q.xml, "INFO-200", "nodata")
	}
	idx := q.periods(p.h.Now(), q.in.Provider().Location)
	total := len(idx)
	if total == 0 || q.start > total {
		return result(q.xml, "INFO-200", "nodata")
	}
	rows := idx[q.start-1 : min(q.end, total)]
	t := p.newTable(q, rt.Dataset)
	if q.xml {
		return t.xml(rows, total)
	}
	return t.json(rows, total)
}

// search is a parsed StatisticSearch request.
type search struct {
	in         *simulator.Instance
	xml, en    bool
	start, end int // 1-based row range
	stat       string
	cycle      string
	from, to   int64 // periods as parsePeriod reads them
	items      [4]string
}

// parseSearch reads and checks a StatisticSearch path in the order ECOS
// does (key, format, limit, service, language, rows, statistic, periods),
// answering the first failure with its RESULT code.
func (p *provider) parseSearch(r *http.Request, rt simulator.Route, fraction float64) (*search, *simulator.Reply) {
	seg := strings.Split(strings.TrimPrefix(rt.Path, "/api/"), "/")
	for len(seg) > 0 && seg[len(seg)-1] == "" {
		seg = seg[:len(seg)-1]
	}
	xml := len(seg) > 2 && seg[2] == "xml"
	var in *simulator.Instance
	if len(seg) > 1 {
		in = p.h.Owner("api_key", seg[1])
	}
	if in == nil {
		return nil, result(xml, "INFO-100", "auth")
	}
	if len(seg) < 3 || (seg[2] != "json" && seg[2] != "xml") {
		return nil, result(false, "ERROR-200", "error")
	}
	if adm := p.h.Admit(r, in, rt.Dataset, fraction); !adm.OK {
		return nil, result(xml, "ERROR-602", "limit")
	}
	if seg[0] != "StatisticSearch" {
		return nil, result(xml, "ERROR-500", "error")
	}
	if len(seg) < 4 || (seg[3] != "kr" && seg[3] != "en") {
		return nil, result(xml, "ERROR-100", "error")
	}
	if len(seg) < 6 {
		return nil, result(xml, "ERROR-300", "error")
	}
	start, err1 := strconv.Atoi(seg[4])
	end, err2 := strconv.Atoi(seg[5])
	if err1 != nil || err2 != nil || start < 1 || end < start {
		return nil, result(xml, "ERROR-301", "error")
	}
	if end-start+1 > maxRows {
		return nil, result(xml, "ERROR-400", "error")
	}
	if len(seg) < 10 || seg[6] == "" || seg[7] == "" || seg[8] == "" || seg[9] == "" {
		return nil, result(xml, "ERROR-100", "error")
	}
	stat, cycle := seg[6], seg[7]
	if !validCycle(cycle) {
		return nil, result(xml, "ERROR-100", "error")
	}
	from, ok1 := parsePeriod(cycle, seg[8])
	to, ok2 := parsePeriod(cycle, seg[9])
	if !ok1 || !ok2 {
		return nil, result(xml, "ERROR-101", "error")
	}
	q := &search{in: in, xml: xml, en: seg[3] == "en", start: start, end: end,
		stat: stat, cycle: cycle, from: from, to: to}
	for i := 0; i < 4 && 10+i < len(seg); i++ {
		if seg[10+i] != "?" {
			q.items[i] = seg[10+i]
		}
	}
	return q, nil
}

// periods lists the asked periods that are published at now (KRX business
// days only for the daily cycle), at most a little over maxRows*4.
func (q *search) periods(now time.Time, loc *time.Location) []int64 {
	to := min(q.to, latest(q.stat, q.cycle, now, loc))
	from := max(q.from, firstPeriod(q.cycle))
	var idx []int64
	for pd := from; pd <= to && len(idx) <= maxRows*4; pd++ {
		if q.cycle == "D" && !synth.KRX.Open(synth.Day(pd)) {
			continue
		}
		idx = append(idx, pd)
	}
	return idx
}

// table renders the rows of one search: the names, unit and synthetic
// series its statistic and first item stand for.
type table struct {
	q                  *search
	statName, itemName string
	unit               string
	kind               kind
	series             synth.Series
}

func (p *provider) newTable(q *search, ds *registry.Dataset) *table {
	seed := p.h.Seed()
	statName, itemName := names(q.stat, q.items[0], ds)
	kind := kindFor(q.stat, q.items[0], statName+" "+itemName)
	key := "ecos|" + q.stat + "|" + q.cycle + "|" + strings.Join(q.items[:], "|")
	t := &table{q: q, statName: statName, itemName: itemName, unit: kind.unit, kind: kind,
		series: synth.NewSeries(seed, key, kind.base(seed, key, q.items[0]), kind.vol)}
	if q.en {
		t.unit = kind.unitEN
	}
	return t
}

// value is the period's DATA_VALUE: the series at the period's middle day,
// rounded to the kind's step.
func (t *table) value(pd int64) string {
	a, b := span(t.q.cycle, pd)
	v := t.series.Value(a + (b-a)/2)
	if t.kind.step > 0 {
		v = math.Round(v/t.kind.step) * t.kind.step
	}
	return simulator.FormatTrim(v, t.kind.dec)
}

func (t *table) xml(rows []int64, total int) *simulator.Reply {
	q := t.q
	b := make([]byte, 0, 256+400*len(rows))
	b = append(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n<StatisticSearch>\n"...)
	b = simulator.AppendXMLElem(b, "list_total_count", strconv.Itoa(total))
	b = append(b, '\n')
	for _, pd := range rows {
		b = append(b, "<row>"...)
		b = simulator.AppendXMLElem(b, "STAT_CODE", q.stat)
		b = simulator.AppendXMLElem(b, "STAT_NAME", t.statName)
		for i := 0; i < 4; i++ {
			n := strconv.Itoa(i + 1)
			b = simulator.AppendXMLElem(b, "ITEM_CODE"+n, q.items[i])
			b = simulator.AppendXMLElem(b, "ITEM_NAME"+n, itemNameOf(i, q.items[i], t.itemName))
		}
		b = simulator.AppendXMLElem(b, "UNIT_NAME", t.unit)
		b = simulator.AppendXMLElem(b, "WGT", "")
		b = simulator.AppendXMLElem(b, "TIME", formatPeriod(q.cycle, pd))
		b = simulator.AppendXMLElem(b, "DATA_VALUE", t.value(pd))
		b = append(b, "</row>\n"...)
	}
	b = append(b, "</StatisticSearch>\n"...)
	return simulator.NewReply(http.StatusOK, ctXML, b, "ok")
}

func (t *table) json(rows []int64, total int) *simulator.Reply {
	q := t.q
	w := simulator.NewJSON(256 + 400*len(rows))
	w.Open('{')
	w.Key("StatisticSearch")
	w.Open('{')
	w.KInt("list_total_count", int64(total))
	w.Key("row")
	w.Open('[')
	for _, pd := range rows {
		w.Open('{')
		w.KStr("STAT_CODE", q.stat)
		w.KStr("STAT_NAME", t.statName)
		for i := 0; i < 4; i++ {
			n := strconv.Itoa(i + 1)
			w.KStrOrNull("ITEM_CODE"+n, q.items[i])
			w.KStrOrNull("ITEM_NAME"+n, itemNameOf(i, q.items[i], t.itemName))
		}
		w.KStr("UNIT_NAME", t.unit)
		w.KNull("WGT")
		w.KStr("TIME", formatPeriod(q.cycle, pd))
		w.KStr("DATA_VALUE", t.value(pd))
		w.Close('}')
	}
	w.Close(']')
	w.Close('}')
	w.Close('}')
	return simulator.NewReply(http.StatusOK, ctJSON, w.Bytes(), "ok")
}

func itemNameOf(i int, code, first string) string {
	switch {
	case code == "":
		return ""
	case i == 0:
		return first
	}
	return "항목 " + code
}

func validCycle(c string) bool {
	switch c {
	case "A", "S", "Q", "M", "SM", "D":
		return true
	}
	return false
}

// ECOS periods are integers: A a year, S year*2+half, Q year*4+quarter,
// M year*12+month, SM (year*12+month)*2+half (all zero-based), D a day.

func parsePeriod(cycle, s string) (int64, bool) {
	digits := func(v string) (int, bool) {
		if v == "" {
			return 0, false
		}
		n := 0
		for i := 0; i < len(v); i++ {
			if v[i] < '0' || v[i] > '9' {
				return 0, false
			}
			n = n*10 + int(v[i]-'0')
		}
		return n, true
	}
	switch cycle {
	case "A":
		if y, ok := digits(s); ok && len(s) == 4 {
			return int64(y), true
		}
	case "S":
		if len(s) == 6 && s[4] == 'S' {
			y, ok1 := digits(s[:4])
			h, ok2 := digits(s[5:])
			if ok1 && ok2 && h >= 1 && h <= 2 {
				return int64(y*2 + h - 1), true
			}
		}
	case "Q":
		if len(s) == 6 && s[4] == 'Q' {
			y, ok1 := digits(s[:4])
			q, ok2 := digits(s[5:])
			if ok1 && ok2 && q >= 1 && q <= 4 {
				return int64(y*4 + q - 1), true
			}
		}
	case "M":
		if len(s) == 6 {
			y, ok1 := digits(s[:4])
			m, ok2 := digits(s[4:])
			if ok1 && ok2 && m >= 1 && m <= 12 {
				return int64(y*12 + m - 1), true
			}
		}
	case "SM":
		if len(s) == 8 && s[6] == 'S' {
			y, ok1 := digits(s[:4])
			m, ok2 := digits(s[4:6])
			h, ok3 := digits(s[7:])
			if ok1 && ok2 && ok3 && m >= 1 && m <= 12 && h >= 1 && h <= 2 {
				return int64((y*12+m-1)*2 + h - 1), true
			}
		}
	case "D":
		if d, ok := synth.ParseYYYYMMDD(s); ok {
			return int64(d), true
		}
	}
	return 0, false
}

func formatPeriod(cycle string, p int64) string {
	pad := func(n int64, w int) string {
		s := strconv.FormatInt(n, 10)
		for len(s) < w {
			s = "0" + s
		}
		return s
	}
	switch cycle {
	case "A":
		return pad(p, 4)
	case "S":
		return pad(p/2, 4) + "S" + strconv.FormatInt(p%2+1, 10)
	case "Q":
		return pad(p/4, 4) + "Q" + strconv.FormatInt(p%4+1, 10)
	case "M":
		return pad(p/12, 4) + pad(p%12+1, 2)
	case "SM":
		m := p / 2
		return pad(m/12, 4) + pad(m%12+1, 2) + "S" + strconv.FormatInt(p%2+1, 10)
	}
	return synth.Day(p).YYYYMMDD()
}

// span returns the first and last day of a period.
func span(cycle string, p int64) (synth.Day, synth.Day) {
	month := func(y, m int) (synth.Day, synth.Day) {
		first := synth.Date(y, time.Month(m), 1)
		return first, first + synth.Day(synth.DaysIn(y, time.Month(m))) - 1
	}
	switch cycle {
	case "A":
		return synth.Date(int(p), 1, 1), synth.Date(int(p), 12, 31)
	case "S":
		y, h := int(p/2), int(p%2)
		a, _ := month(y, h*6+1)
		_, b := month(y, h*6+6)
		return a, b
	case "Q":
		y, q := int(p/4), int(p%4)
		a, _ := month(y, q*3+1)
		_, b := month(y, q*3+3)
		return a, b
	case "M":
		return month(int(p/12), int(p%12)+1)
	case "SM":
		m := p / 2
		a, b := month(int(m/12), int(m%12)+1)
		if p%2 == 0 {
			return a, a + 14
		}
		return a + 15, b
	}
	return synth.Day(p), synth.Day(p)
}

// periodOf returns the period containing day d.
func periodOf(cycle string, d synth.Day) int64 {
	y, m, dd := d.Civil()
	switch cycle {
	case "A":
		return int64(y)
	case "S":
		return int64(y*2 + (int(m)-1)/6)
	case "Q":
		return int64(y*4 + (int(m)-1)/3)
	case "M":
		return int64(y*12 + int(m) - 1)
	case "SM":
		h := 0
		if dd > 15 {
			h = 1
		}
		return int64((y*12+int(m)-1)*2 + h)
	}
	return int64(d)
}

// publishLag is how long after a period ends ECOS publishes it, by cycle;
// statLag overrides it for the registry's statistics whose release is far
// from their cycle's (approximate, from the releases' usual calendars).
var publishLag = map[string]synth.Day{"A": 80, "S": 70, "Q": 60, "M": 25, "SM": 10}

var statLag = map[string]synth.Day{
	// 통화 및 유동성 (M1, M2, Lf): released in the middle of the second
	// month after (September's in mid-November).
	"161Y004": 45, "161Y005": 45, "161Y006": 45, "161Y007": 45, "161Y008": 45, "161Y010": 45, "171Y002": 45,
	// 소비자물가지수: Statistics Korea releases a month's CPI in the first
	// days of the next month.
	"901Y009": 2, "901Y010": 2,
	// 통관기준 수출입 (customs trade, released on the 1st) and the monthly
	// average exchange rate (the first business day after the month).
	"901Y118": 1, "731Y004": 1,
	// 소비자동향조사 (with 기대인플레이션율) and 기업경기조사: surveys
	// released in the last week of the month they describe.
	"511Y002": -4, "511Y003": -4, "512Y014": -4,
}

// lagOf is the publication lag of a statistic of a cycle.
func lagOf(stat, cycle string) synth.Day {
	if cycle != "D" {
		if l, ok := statLag[stat]; ok {
			return l
		}
	}
	return publishLag[cycle]
}

// latest returns the newest published period at now: daily data the next
// business day at 09:00 KST (Friday's on Monday), others a lag after the
// period ends.
func latest(stat, cycle string, now time.Time, loc *time.Location) int64 {
	if cycle == "D" {
		return int64(synth.LatestNextOpen(synth.KRX, synth.KRX, now, loc, 9))
	}
	today := synth.DayOf(now.In(loc))
	p := periodOf(cycle, today)
	lag := lagOf(stat, cycle)
	for i := 0; i < 12; i++ {
		if _, last := span(cycle, p); last+lag <= today {
			return p
		}
		p--
	}
	return p
}

// firstPeriod is the first period the simulator has data for.
func firstPeriod(cycle string) int64 { return periodOf(cycle, synth.Date(1990, 1, 1)) }

// names returns STAT_NAME and ITEM_NAME1: from the dataset's name
// ("시장금리(일별): 국고채(3년)") when it has one, else from the table.
func names(stat, item string, ds *registry.Dataset) (string, string) {
	statName := statNames[stat]
	if statName == "" {
		statName = "통계표 " + stat
	}
	itemName := ""
	if ds != nil && ds.Name != "" && ds.Name != ds.ID {
		n := ds.Name
		if a, b, ok := strings.Cut(n, ": "); ok {
			if statNames[stat] == "" {
				statName = a
			}
			n = b
		}
		for _, suffix := range []string{" 일별", " (일별)", " 월별", " 분기", " 연간"} {
			n = strings.TrimSuffix(n, suffix)
		}
		itemName = n
	}
	if itemName == "" {
		itemName = "항목 " + item
	}
	return statName, itemName
}

var statNames = map[string]string{
	"722Y001": "1.3.1. 한국은행 기준금리 및 여수신금리",
	"817Y002": "1.3.2.2. 시장금리(일별)",
	"721Y001": "1.3.2.1. 시장금리(월,분기,년)",
	"731Y001": "3.1.1.1. 주요국 통화의 대원화환율",
	"731Y004": "3.1.1.2. 주요국 통화의 대원화환율 통계자료",
	"802Y001": "1.5.1.1. 주식시장(일)",
	"901Y009": "4.2.1. 소비자물가지수",
	"404Y014": "4.1.1.1. 생산자물가지수(기본분류)",
	"200Y102": "2.1.1.1. 주요지표(분기지표)",
}

// kind is how a statistic's values look.
type kind struct {
	unit, unitEN string
	lo, hi       float64
	dec          int
	vol          float64
	step         float64 // values move in steps (the policy rate)
}

func (k kind) base(seed int64, key, item string) float64 {
	if b, ok := itemBase[item]; ok && k.unit == "원" {
		return b
	}
	return synth.Pick(seed, key, k.lo, k.hi)
}

var itemBase = map[string]float64{"0000001": 1330, "0000002": 900, "0000003": 1450, "0000012": 1700, "0000053": 185}

var (
	kindRate    = kind{unit: "연%", unitEN: "% p.a.", lo: 1.5, hi: 5, dec: 3, vol: 0.012}
	kindPolicy  = kind{unit: "연%", unitEN: "% p.a.", lo: 2.5, hi: 3.5, dec: 2, vol: 0.004, step: 0.25}
	kindPercent = kind{unit: "%", unitEN: "%", lo: -1, hi: 4, dec: 1, vol: 0.05}
	kindFX      = kind{unit: "원", unitEN: "Won", lo: 100, hi: 1500, dec: 2, vol: 0.005}
	kindIndex   = kind{unit: "2020=100", unitEN: "2020=100", lo: 100, hi: 130, dec: 2, vol: 0.004}
	kindStock   = kind{unit: "1980.01.04=100", unitEN: "1980.01.04=100", lo: 700, hi: 2600, dec: 2, vol: 0.01}
	kindAmount  = kind{unit: "십억원", unitEN: "Billion Won", lo: 200000, hi: 4000000, dec: 1, vol: 0.003}
	kindSurvey  = kind{unit: "", unitEN: "", lo: 75, hi: 110, dec: 0, vol: 0.02}
	kindOil     = kind{unit: "달러/배럴", unitEN: "Dollar/Barrel", lo: 60, hi: 90, dec: 2, vol: 0.015}
)

// kindFor classifies a statistic by its code and names.
func kindFor(stat, item, names string) kind {
	switch {
	case stat == "722Y001":
		return kindPolicy
	case strings.HasPrefix(stat, "817Y") || strings.HasPrefix(stat, "721Y") || strings.HasPrefix(stat, "121Y"):
		return kindRate
	case strings.HasPrefix(stat, "731Y"):
		return kindFX
	case stat == "802Y001":
		k := kindStock
		if item == "0001000" {
			k.lo, k.hi = 2400, 2600
		} else if item == "0089000" {
			k.lo, k.hi = 750, 850
		}
		return k
	case stat == "902Y003":
		return kindOil
	case strings.HasPrefix(stat, "512Y") || strings.Contains(names, "BSI") || strings.Contains(names, "CSI"):
		return kindSurvey
	}
	switch {
	case containsAny(names, "금리", "수익률", "KORIBOR", "KOFR", "RFR"):
		return kindRate
	case containsAny(names, "률", "율", "기대인플레이션"):
		return kindPercent
	case containsAny(names, "환율", "원/"):
		return kindFX
	case containsAny(names, "지수"):
		return kindIndex
	case containsAny(names, "잔", "통화", "금액", "총액", "GDP", "국내총생산", "지출", "징수"):
		return kindAmount
	}
	return kindIndex
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
