package datago

import (
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/synth"
)

// schema is the item shape of one kind of data.go.kr operation.
type schema struct {
	entities []string // rows per day
	filter   string   // query parameter that selects one entity by name
	row      func(g *generator, day synth.Day, entity string) []kv
	stream   bool // TourAPI-style list of recently modified entries
}

func schemaFor(op string) *schema {
	switch op {
	case "getStockMarketIndex":
		return stockIndexSchema
	case "getBondMarketIndex":
		return bondIndexSchema
	case "getDerivationProductMarketIndex":
		return derivIndexSchema
	case "areaBasedList", "areaBasedSyncList", "locationBasedList", "searchKeyword":
		return tourSchema
	}
	return genericSchema
}

var (
	stockIndexSchema = &schema{entities: stockIndexNames(), filter: "idxNm", row: stockIndexRow}
	bondIndexSchema  = &schema{entities: bondIndexNames, filter: "idxNm", row: bondIndexRow}
	derivIndexSchema = &schema{entities: derivIndexNames, filter: "idxNm", row: derivIndexRow}
	tourSchema       = &schema{stream: true}
	genericSchema    = &schema{entities: []string{"항목 A", "항목 B", "항목 C", "항목 D", "항목 E"}, filter: "itmsNm", row: genericRow}
)

func stockIndexNames() []string {
	families := []string{"코스피", "코스닥", "코스피 200", "KRX", "KRX 300"}
	sectors := []string{"", " 대형주", " 중형주", " 소형주", " 음식료품", " 섬유의복", " 종이목재", " 화학", " 의약품",
		" 비금속광물", " 철강금속", " 기계", " 전기전자", " 의료정밀", " 운수장비", " 유통업", " 전기가스업", " 건설업",
		" 운수창고업", " 통신업", " 금융업", " 증권", " 보험", " 서비스업", " 제조업"}
	var out []string
	for _, f := range families {
		for _, s := range sectors {
			out = append(out, f+s)
		}
	}
	return out
}

var bondIndexNames = []string{
	"KRX 채권지수", "KTB 지수", "국고채프라임지수", "KRX 국고채 1-2년 지수", "KRX 국고채 3-5년 지수",
	"KRX 국고채 5-10년 지수", "KRX 국고채 10년 이상 지수", "KRX 통안채 지수", "KRX 은행채 지수",
	"KRX 회사채 AA- 이상 지수", "KRX 단기채권지수", "KRX 중기채권지수", "KRX 장기채권지수",
	"KRX 물가연동국고채 지수", "KRX 지방채 지수", "KRX 특수채 지수", "KRX 금융채 지수",
	"KAP 국고채 지수", "KIS 종합채권지수", "MK 머니마켓지수",
}

var derivIndexNames = []string{
	"코스피 200 선물지수", "코스피 200 선물 레버리지지수", "코스피 200 선물 인버스지수", "코스피 200 선물 인버스 2X 지수",
	"코스닥 150 선물지수", "코스닥 150 선물 인버스지수", "코스피 200 변동성지수", "코스피 200 커버드콜지수",
	"코스피 200 프로텍티브풋지수", "미국달러선물지수", "미국달러선물 인버스지수", "엔선물지수", "유로선물지수",
	"3년국채선물지수", "10년국채선물지수", "10년국채선물 인버스지수", "금선물지수", "원유선물지수(H)",
	"코스피 200 위클리 커버드콜지수", "KRX 합성 선물지수",
}

// entitySeries is the synthetic level of one named index.
func (g *generator) entitySeries(prefix, name string, lo, hi, vol float64) synth.Series {
	key := "datago|" + prefix + "|" + name
	return synth.NewSeries(g.seed, key, synth.Pick(g.seed, key, lo, hi), vol)
}

func dayBar(s synth.Series, d synth.Day) synth.Bar { return s.Bar(float64(d), float64(d)+1, int64(d)) }

func dayClose(s synth.Series, d synth.Day) float64 {
	return s.Close(float64(d), float64(d)+1, int64(d))
}

func pct(diff, base float64) string {
	if base == 0 {
		return "0"
	}
	return simulator.FormatFixed(100*diff/base, 2)
}

// stockIndexBases are the typical levels of the headline indices.
var stockIndexBases = map[string]float64{"코스피": 2500, "코스닥": 800, "코스피 200": 330, "KRX 300": 1500}

func stockIndexRow(g *generator, day synth.Day, name string) []kv {
	s := g.entitySeries("stock", name, 400, 3500, 0.011)
	if base, ok := stockIndexBases[name]; ok {
		s = synth.NewSeries(g.seed, "datago|stock|"+name, base, 0.011)
	}
	b := dayBar(s, day)
	prev := dayClose(s, synth.KRX.Prev(day))
	y, _, _ := day.Civil()
	yearEnd := synth.KRX.Prev(synth.Date(y, 1, 1))
	ye := dayClose(s, yearEnd)
	// 52-week record high and low over a sample of days.
	hi, lo := b.Close, b.Close
	hiDay, loDay := day, day
	for i := synth.Day(1); i <= 8; i++ {
		d := synth.KRX.Prev(day - i*45)
		c := dayClose(s, d)
		if c > hi {
			hi, hiDay = c, d
		}
		if c < lo {
			lo, loDay = c, d
		}
	}
	c := simulator.Round(b.Close, 2)
	cls := "KOSPI시리즈"
	switch {
	case strings.HasPrefix(name, "코스닥"):
		cls = "KOSDAQ시리즈"
	case strings.HasPrefix(name, "KRX"):
		cls = "KRX시리즈"
	}
	return []kv{
		{"basDt", day.YYYYMMDD()}, {"idxNm", name}, {"idxCsf", cls},
		{"epyItmsCnt", strconv.Itoa(20 + int(s.Key()%800))},
		{"clpr", simulator.FormatFixed(c, 2)}, {"vs", simulator.FormatFixed(c-simulator.Round(prev, 2), 2)}, {"fltRt", pct(c-prev, prev)},
		{"mkp", simulator.FormatFixed(b.Open, 2)}, {"hipr", simulator.FormatFixed(b.High, 2)}, {"lopr", simulator.FormatFixed(b.Low, 2)},
		{"trqu", simulator.FormatAmount(2e8 * b.Volume)}, {"trPrc", simulator.FormatAmount(6e12 * b.Volume)},
		{"lstgMrktTotAmt", simulator.FormatAmount(1.5e15 * b.Close / s.Base())},
		{"lsYrEdVsFltRg", simulator.FormatFixed(c-simulator.Round(ye, 2), 2)}, {"lsYrEdVsFltRt", pct(c-ye, ye)},
		{"yrWRcrdHgst", simulator.FormatFixed(hi, 2)}, {"yrWRcrdHgstDt", hiDay.YYYYMMDD()},
		{"yrWRcrdLwst", simulator.FormatFixed(lo, 2)}, {"yrWRcrdLwstDt", loDay.YYYYMMDD()},
		{"basPntm", "19800104"}, {"basIdx", "100"},
	}
}

func bondIndexRow(g *generator, day synth.Day, name string) []kv {
	out := []kv{{"basDt", day.YYYYMMDD()}, {"idxNm", name}}
	for _, part := range []struct {
		prefix string
		lo, hi float64
	}{{"totBnfIdx", 150, 250}, {"nPrcIdx", 95, 115}, {"zrRinvIdx", 150, 250}, {"clRinvIdx", 150, 250}, {"mrktPrcIdx", 100, 130}} {
		s := g.entitySeries("bond|"+part.prefix, name, part.lo, part.hi, 0.002)
		c := simulator.Round(s.Value(day), 2)
		p := simulator.Round(s.Value(synth.KRX.Prev(day)), 2)
		out = append(out, kv{part.prefix + "Clpr", simulator.FormatFixed(c, 2)}, kv{part.prefix + "Vs", simulator.FormatFixed(c-p, 2)})
	}
	d := g.entitySeries("bond|drtn", name, 1.5, 12, 0.002)
	r := g.entitySeries("bond|rate", name, 2.5, 4.5, 0.01)
	out = append(out,
		kv{"bnfIdxAvgDrtn", simulator.FormatFixed(d.Value(day), 3)},
		kv{"bnfIdxAvgCnvx", simulator.FormatFixed(d.Value(day)*d.Value(day)/8, 3)},
		kv{"bnfIdxAvgBnfRt", simulator.FormatFixed(r.Value(day), 3)})
	return out
}

func derivIndexRow(g *generator, day synth.Day, name string) []kv {
	s := g.entitySeries("deriv", name, 50, 2500, 0.013)
	b := dayBar(s, day)
	prev := dayClose(s, synth.KRX.Prev(day))
	c := simulator.Round(b.Close, 2)
	return []kv{
		{"basDt", day.YYYYMMDD()}, {"idxNm", name}, {"idxCsf", "파생상품지수"},
		{"clpr", simulator.FormatFixed(c, 2)}, {"vs", simulator.FormatFixed(c-simulator.Round(prev, 2), 2)}, {"fltRt", pct(c-prev, prev)},
		{"mkp", simulator.FormatFixed(b.Open, 2)}, {"hipr", simulator.FormatFixed(b.High, 2)}, {"lopr", simulator.FormatFixed(b.Low, 2)},
		{"basPntm", "20100104"}, {"basIdx", "1000"},
	}
}

func genericRow(g *generator, day synth.Day, name string) []kv {
	s := g.entitySeries("generic|"+g.op, name, 1000, 100000, 0.012)
	b := dayBar(s, day)
	prev := dayClose(s, synth.KRX.Prev(day))
	c := simulator.Round(b.Close, 0)
	return []kv{
		{"basDt", day.YYYYMMDD()}, {"itmsNm", name},
		{"clpr", simulator.FormatFixed(c, 0)}, {"vs", simulator.FormatFixed(c-simulator.Round(prev, 0), 0)}, {"fltRt", pct(c-prev, prev)},
		{"mkp", simulator.FormatFixed(b.Open, 0)}, {"hipr", simulator.FormatFixed(b.High, 0)}, {"lopr", simulator.FormatFixed(b.Low, 0)},
		{"trqu", simulator.FormatAmount(1e6 * b.Volume)}, {"trPrc", simulator.FormatAmount(1e6 * b.Volume * b.Close)},
	}
}

// The TourAPI stream: an entry is modified every tourEvery since
// tourEpoch; a list sorted by modification time (arrange=C) shows the
// newest modifications first, so it changes as time passes.
var (
	tourEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	tourEvery = 7 * time.Minute
)

func tourTotal(seed int64) int { return 48000 + int(synth.Hash(seed, "tour-total", 0)%1000) }

var tourAreas = []struct {
	code, name string
	x, y       float64
	sigungu    []string
}{
	{"1", "서울특별시", 126.978, 37.5665, []string{"종로구", "중구", "용산구", "마포구", "강남구"}},
	{"6", "부산광역시", 129.0756, 35.1796, []string{"해운대구", "중구", "수영구", "기장군"}},
	{"31", "경기도", 127.0286, 37.2636, []string{"수원시", "가평군", "파주시", "용인시"}},
	{"32", "강원특별자치도", 128.2093, 37.5551, []string{"강릉시", "속초시", "춘천시", "평창군"}},
	{"35", "경상북도", 129.2247, 35.8562, []string{"경주시", "안동시", "포항시"}},
	{"39", "제주특별자치도", 126.5312, 33.4996, []string{"제주시", "서귀포시"}},
}

var (
	tourNames    = []string{"한빛", "솔바람", "푸른", "달빛", "은하", "청송", "매화", "해오름", "별빛", "노을", "바다", "산들"}
	tourSuffixes = []string{"한옥마을", "계곡", "전망대", "카페", "박물관", "공원", "해수욕장", "식당", "게스트하우스", "축제", "시장", "둘레길"}
	tourTypes    = []struct{ typ, cat1, cat2, cat3 string }{
		{"12", "A01", "A0101", "A01010400"}, {"14", "A02", "A0206", "A02060100"}, {"15", "A02", "A0207", "A02070200"},
		{"28", "A03", "A0302", "A03022600"}, {"32", "B02", "B0201", "B02011600"}, {"38", "A04", "A0401", "A04010200"},
		{"39", "A05", "A0502", "A05020100"},
	}
)

func tourItem(seed int64, k int64, loc *time.Location) []kv {
	h := synth.Hash(seed, "tour-event", k)
	id := 125000 + int64(h%3000000)
	c := synth.Hash(seed, "tour-content", id)
	area := tourAreas[c%uint64(len(tourAreas))]
	sig := int(c>>8) % len(area.sigungu)
	typ := tourTypes[(c>>16)%uint64(len(tourTypes))]
	name := tourNames[(c>>24)%uint64(len(tourNames))]
	title := name + " " + tourSuffixes[(c>>32)%uint64(len(tourSuffixes))]
	modified := tourEpoch.Add(time.Duration(k) * tourEvery).In(loc)
	created := modified.Add(-time.Duration(c%2000) * 24 * time.Hour)
	x := area.x + float64(int64(c>>24)%2000000-1000000)/1e7
	y := area.y + float64(int64(c>>4)%2000000-1000000)/1e7
	image, image2 := "", ""
	if c%10 >= 3 {
		image = "http://tong.visitkorea.or.kr/cms/resource/" + strconv.Itoa(int(c%90)+10) + "/" + strconv.FormatInt(3000000+id, 10) + "_image2_1.jpg"
		image2 = "http://tong.visitkorea.or.kr/cms/resource/" + strconv.Itoa(int(c%90)+10) + "/" + strconv.FormatInt(3000000+id, 10) + "_image3_1.jpg"
	}
	copyright := ""
	if image != "" {
		copyright = "Type3"
	}
	tel := ""
	if c%4 != 0 {
		tel = "0" + strconv.Itoa(2+int(c%60)) + "-" + strconv.Itoa(200+int(c>>12)%800) + "-" + strconv.Itoa(1000+int(c>>28)%9000)
	}
	return []kv{
		{"addr1", area.name + " " + area.sigungu[sig] + " " + name + "로 " + strconv.Itoa(1+int(c%300))},
		{"addr2", ""},
		{"areacode", area.code},
		{"cat1", typ.cat1}, {"cat2", typ.cat2}, {"cat3", typ.cat3},
		{"contentid", strconv.FormatInt(id, 10)},
		{"contenttypeid", typ.typ},
		{"createdtime", created.Format("20060102150405")},
		{"firstimage", image}, {"firstimage2", image2},
		{"cpyrhtDivCd", copyright},
		{"mapx", strconv.FormatFloat(x, 'f', 10, 64)}, {"mapy", strconv.FormatFloat(y, 'f', 10, 64)},
		{"mlevel", "6"},
		{"modifiedtime", modified.Format("20060102150405")},
		{"sigungucode", strconv.Itoa(sig + 1)},
		{"tel", tel},
		{"title", title},
		{"zipcode", strconv.Itoa(10000 + int(c%53000))},
	}
}
