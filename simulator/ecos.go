package simulator

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator/synth"
)

// ECOS result codes and messages.
var ecosMessages = map[string]string{
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

// ecosMaxRows is the most rows one StatisticSearch call may ask for.
const ecosMaxRows = 100000

// ecosResult is an ECOS error or notice: always HTTP 200.
func ecosResult(xml bool, code, outcome string) *reply {
	msg := ecosMessages[code]
	if xml {
		b := []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<RESULT>\n")
		b = xelem(b, "CODE", code)
		b = append(b, '\n')
		b = xelem(b, "MESSAGE", msg)
		b = append(b, "\n</RESULT>\n"...)
		return newReply(http.StatusOK, ctXML, b, outcome)
	}
	var w jw
	w.open('{')
	w.key("RESULT")
	w.open('{')
	w.kstr("CODE", code)
	w.kstr("MESSAGE", msg)
	w.close('}')
	w.close('}')
	return newReply(http.StatusOK, ctJSONUp, w.b, outcome)
}

// serveECOS answers GET /api/StatisticSearch/{KEY}/{json|xml}/{kr|en}/
// {start}/{end}/{STAT}/{CYCLE}/{from}/{to}/{items…}.
func (s *Simulator) serveECOS(r *http.Request, rt route, fraction float64) *reply {
	seg := strings.Split(strings.TrimPrefix(rt.path, "/api/"), "/")
	for len(seg) > 0 && seg[len(seg)-1] == "" {
		seg = seg[:len(seg)-1]
	}
	xml := len(seg) > 2 && seg[2] == "xml"
	var ps *provState
	if len(seg) > 1 {
		ps = s.credentialOwner("ecos", "api_key", seg[1])
	}
	if ps == nil {
		return ecosResult(xml, "INFO-100", "auth")
	}
	if len(seg) < 3 || (seg[2] != "json" && seg[2] != "xml") {
		return ecosResult(false, "ERROR-200", "error")
	}
	if adm := s.admit(ps, s.datasetScopes(ps, rt.ds), fraction); !adm.ok {
		return ecosResult(xml, "ERROR-602", "limit")
	}
	if seg[0] != "StatisticSearch" {
		return ecosResult(xml, "ERROR-500", "error")
	}
	if len(seg) < 4 || (seg[3] != "kr" && seg[3] != "en") {
		return ecosResult(xml, "ERROR-100", "error")
	}
	if len(seg) < 6 {
		return ecosResult(xml, "ERROR-300", "error")
	}
	start, err1 := strconv.Atoi(seg[4])
	end, err2 := strconv.Atoi(seg[5])
	if err1 != nil || err2 != nil || start < 1 || end < start {
		return ecosResult(xml, "ERROR-301", "error")
	}
	if end-start+1 > ecosMaxRows {
		return ecosResult(xml, "ERROR-400", "error")
	}
	if len(seg) < 10 || seg[6] == "" || seg[7] == "" || seg[8] == "" || seg[9] == "" {
		return ecosResult(xml, "ERROR-100", "error")
	}
	stat, cycle := seg[6], seg[7]
	if !ecosCycle(cycle) {
		return ecosResult(xml, "ERROR-100", "error")
	}
	from, ok1 := ecosParse(cycle, seg[8])
	to, ok2 := ecosParse(cycle, seg[9])
	if !ok1 || !ok2 {
		return ecosResult(xml, "ERROR-101", "error")
	}
	if len(s.ecosStats[stat]) == 0 {
		return ecosResult(xml, "INFO-200", "nodata")
	}
	var items [4]string
	for i := 0; i < 4 && 10+i < len(seg); i++ {
		if seg[10+i] != "?" {
			items[i] = seg[10+i]
		}
	}
	now := s.now()
	loc := ps.p.Location
	to = min(to, ecosLatest(cycle, now, loc))
	first := ecosParseFirst(cycle)
	from = max(from, first)
	var idx []int64
	for p := from; p <= to && len(idx) <= ecosMaxRows*4; p++ {
		if cycle == "D" && !synth.KRX.Open(synth.Day(p)) {
			continue
		}
		idx = append(idx, p)
	}
	total := len(idx)
	if total == 0 || start > total {
		return ecosResult(xml, "INFO-200", "nodata")
	}
	rows := idx[start-1 : min(end, total)]

	ds := rt.ds
	statName, itemName := ecosNames(stat, items[0], ds)
	kind := ecosKindFor(stat, items[0], statName+" "+itemName)
	key := "ecos|" + stat + "|" + cycle + "|" + strings.Join(items[:], "|")
	series := synth.NewSeries(s.seed, key, kind.base(s.seed, key, items[0]), kind.vol)
	unit := kind.unit
	if seg[3] == "en" {
		unit = kind.unitEN
	}
	value := func(p int64) string {
		a, b := ecosSpan(cycle, p)
		v := series.Value(a + (b-a)/2)
		if kind.step > 0 {
			v = math.Round(v/kind.step) * kind.step
		}
		return formatTrim(v, kind.dec)
	}

	if xml {
		b := make([]byte, 0, 256+400*len(rows))
		b = append(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n<StatisticSearch>\n"...)
		b = xelem(b, "list_total_count", strconv.Itoa(total))
		b = append(b, '\n')
		for _, p := range rows {
			b = append(b, "<row>"...)
			b = xelem(b, "STAT_CODE", stat)
			b = xelem(b, "STAT_NAME", statName)
			for i := 0; i < 4; i++ {
				n := strconv.Itoa(i + 1)
				b = xelem(b, "ITEM_CODE"+n, items[i])
				b = xelem(b, "ITEM_NAME"+n, ecosItemName(i, items[i], itemName))
			}
			b = xelem(b, "UNIT_NAME", unit)
			b = xelem(b, "WGT", "")
			b = xelem(b, "TIME", ecosFormat(cycle, p))
			b = xelem(b, "DATA_VALUE", value(p))
			b = append(b, "</row>\n"...)
		}
		b = append(b, "</StatisticSearch>\n"...)
		return newReply(http.StatusOK, ctXML, b, "ok")
	}
	w := jw{b: make([]byte, 0, 256+400*len(rows))}
	w.open('{')
	w.key("StatisticSearch")
	w.open('{')
	w.kint("list_total_count", int64(total))
	w.key("row")
	w.open('[')
	for _, p := range rows {
		w.open('{')
		w.kstr("STAT_CODE", stat)
		w.kstr("STAT_NAME", statName)
		for i := 0; i < 4; i++ {
			n := strconv.Itoa(i + 1)
			w.kstrOrNull("ITEM_CODE"+n, items[i])
			w.kstrOrNull("ITEM_NAME"+n, ecosItemName(i, items[i], itemName))
		}
		w.kstr("UNIT_NAME", unit)
		w.knull("WGT")
		w.kstr("TIME", ecosFormat(cycle, p))
		w.kstr("DATA_VALUE", value(p))
		w.close('}')
	}
	w.close(']')
	w.close('}')
	w.close('}')
	return newReply(http.StatusOK, ctJSONUp, w.b, "ok")
}

func ecosItemName(i int, code, first string) string {
	switch {
	case code == "":
		return ""
	case i == 0:
		return first
	}
	return "항목 " + code
}

func ecosCycle(c string) bool {
	switch c {
	case "A", "S", "Q", "M", "SM", "D":
		return true
	}
	return false
}

// ECOS periods are integers: A a year, S year*2+half, Q year*4+quarter,
// M year*12+month, SM (year*12+month)*2+half (all zero-based), D a day.

func ecosParse(cycle, s string) (int64, bool) {
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

func ecosFormat(cycle string, p int64) string {
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

// ecosSpan returns the first and last day of a period.
func ecosSpan(cycle string, p int64) (synth.Day, synth.Day) {
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

// ecosPeriodOf returns the period containing day d.
func ecosPeriodOf(cycle string, d synth.Day) int64 {
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

// ecosPublishLag is how long after a period ends ECOS publishes it.
var ecosPublishLag = map[string]synth.Day{"A": 80, "S": 70, "Q": 60, "M": 25, "SM": 10}

// ecosLatest returns the newest published period at now: daily data the
// next day at 09:00 KST, others a lag after the period ends.
func ecosLatest(cycle string, now time.Time, loc *time.Location) int64 {
	if cycle == "D" {
		return int64(latestDay(synth.KRX, now, loc, 1, 9))
	}
	today := synth.DayOf(now.In(loc))
	p := ecosPeriodOf(cycle, today)
	for i := 0; i < 12; i++ {
		if _, last := ecosSpan(cycle, p); last+ecosPublishLag[cycle] <= today {
			return p
		}
		p--
	}
	return p
}

// ecosParseFirst is the first period the simulator has data for.
func ecosParseFirst(cycle string) int64 { return ecosPeriodOf(cycle, synth.Date(1990, 1, 1)) }

// ecosNames returns STAT_NAME and ITEM_NAME1: from the dataset's name
// ("시장금리(일별): 국고채(3년)") when it has one, else from the table.
func ecosNames(stat, item string, ds *registry.Dataset) (string, string) {
	statName := ecosStatNames[stat]
	if statName == "" {
		statName = "통계표 " + stat
	}
	itemName := ""
	if ds != nil && ds.Name != "" && ds.Name != ds.ID {
		n := ds.Name
		if a, b, ok := strings.Cut(n, ": "); ok {
			if ecosStatNames[stat] == "" {
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

var ecosStatNames = map[string]string{
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

// ecosKind is how a statistic's values look.
type ecosKind struct {
	unit, unitEN string
	lo, hi       float64
	dec          int
	vol          float64
	step         float64 // values move in steps (the policy rate)
}

func (k ecosKind) base(seed int64, key, item string) float64 {
	if b, ok := ecosItemBase[item]; ok && k.unit == "원" {
		return b
	}
	return pick(seed, key, k.lo, k.hi)
}

var ecosItemBase = map[string]float64{"0000001": 1330, "0000002": 900, "0000003": 1450, "0000012": 1700, "0000053": 185}

var (
	kindRate    = ecosKind{unit: "연%", unitEN: "% p.a.", lo: 1.5, hi: 5, dec: 3, vol: 0.012}
	kindPolicy  = ecosKind{unit: "연%", unitEN: "% p.a.", lo: 2.5, hi: 3.5, dec: 2, vol: 0.004, step: 0.25}
	kindPercent = ecosKind{unit: "%", unitEN: "%", lo: -1, hi: 4, dec: 1, vol: 0.05}
	kindFX      = ecosKind{unit: "원", unitEN: "Won", lo: 100, hi: 1500, dec: 2, vol: 0.005}
	kindIndex   = ecosKind{unit: "2020=100", unitEN: "2020=100", lo: 100, hi: 130, dec: 2, vol: 0.004}
	kindStock   = ecosKind{unit: "1980.01.04=100", unitEN: "1980.01.04=100", lo: 700, hi: 2600, dec: 2, vol: 0.01}
	kindAmount  = ecosKind{unit: "십억원", unitEN: "Billion Won", lo: 200000, hi: 4000000, dec: 1, vol: 0.003}
	kindSurvey  = ecosKind{unit: "", unitEN: "", lo: 75, hi: 110, dec: 0, vol: 0.02}
	kindOil     = ecosKind{unit: "달러/배럴", unitEN: "Dollar/Barrel", lo: 60, hi: 90, dec: 2, vol: 0.015}
)

// ecosKindFor classifies a statistic by its code and names.
func ecosKindFor(stat, item, names string) ecosKind {
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
