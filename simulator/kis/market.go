package kis

import (
	"math"
	"strings"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator/synth"
)

// decimalsFor chooses the decimals a quote of this magnitude is shown with.
func decimalsFor(v float64) int {
	switch a := math.Abs(v); {
	case a < 10:
		return 4
	case a < 100:
		return 3
	}
	return 2
}

// displayName turns a dataset name such as "코스피 일별 지수" into the
// instrument name a provider would show ("코스피").
func displayName(ds *registry.Dataset) string {
	if ds == nil || ds.Name == "" || ds.Name == ds.ID {
		return ""
	}
	n := ds.Name
	for _, suffix := range []string{" 일별 지수", " 일별 시세", " 일별 환율", " 일별 금리", " 일별", " (일별)", "(일별)"} {
		n = strings.TrimSuffix(n, suffix)
	}
	return strings.TrimSpace(n)
}

// Known instruments: display names and typical levels. Anything else gets
// a name from its dataset and a level from a hash of its code.
var (
	domesticIndex = map[string]struct {
		name string
		base float64
	}{
		"0001": {"코스피", 2500}, "0002": {"코스피 대형주", 2400}, "0003": {"코스피 중형주", 2700},
		"0004": {"코스피 소형주", 2100}, "1001": {"코스닥", 800}, "2001": {"코스피 200", 330},
		"1028": {"코스피 200", 330},
	}
	overseas = map[string]struct {
		name string
		base float64
	}{
		"SPX": {"S&P500", 5000}, "COMP": {"나스닥 종합", 16000}, "NDX": {"나스닥 100", 18000},
		".DJI": {"다우존스 산업지수", 38000}, "JP#NI225": {"니케이225", 38000}, "HK#HS": {"항셍", 17000},
		"SHANG": {"상해종합", 3000}, "GR#DAX": {"독일 DAX", 18000}, "TW#WT": {"대만 가권", 20000},
		"FX@KRW": {"원/달러", 1330}, "FX@KRWJS": {"원/엔", 900}, "FX@EUR": {"유로/달러", 1.08},
		"FX@JPY": {"엔/달러", 150}, "FX@GBP": {"파운드/달러", 1.27}, "FX@CNY": {"위안/달러", 7.2},
		"Y0202": {"미국 국채 10년", 4.2}, "Y0201": {"미국 국채 30년", 4.4}, "Y0207": {"일본 국채 10년", 0.9},
		"Y0101": {"국고채 3년", 3.2}, "Y0106": {"국고채 10년", 3.4},
		"M0101": {"금", 2000}, "M0102": {"은", 25}, "M0103": {"백금", 950},
	}
	usIndexCodes = map[string]bool{"SPX": true, "COMP": true, "NDX": true, ".DJI": true}
)

// instrument is one synthetic quoted instrument.
type instrument struct {
	name      string
	series    synth.Series
	dec       int
	cal       synth.Calendar
	start     synth.Day
	lag, hour int // publication: lag days later at hour (provider's timezone)
	volBase   float64
	amtBase   float64
}

// bar returns the daily bar of day d.
func (in *instrument) bar(d synth.Day) synth.Bar {
	return in.series.Bar(float64(d), float64(d)+1, int64(d))
}

// instrumentFor describes the instrument a KIS chart request asks for.
func instrumentFor(seed int64, trID, div, iscd string, ds *registry.Dataset) *instrument {
	key := "kis|" + trID + "|" + div + "|" + iscd
	in := &instrument{name: displayName(ds), start: synth.Date(1990, 1, 3)}
	var base, vol float64
	switch trID {
	case "FHKST03030100":
		k, known := overseas[iscd]
		in.cal, in.lag, in.hour = synth.Weekdays, 1, 7
		if usIndexCodes[iscd] {
			in.cal = synth.US
		}
		switch div {
		case "X":
			base, vol = synth.Pick(seed, key, 1, 1500), 0.005
		case "I":
			base, vol = synth.Pick(seed, key, 1, 5), 0.015
		case "S":
			base, vol = synth.Pick(seed, key, 3, 3000), 0.015
			in.volBase = 150000
		default:
			base, vol = synth.Pick(seed, key, 500, 40000), 0.01
			in.volBase = 3e8
		}
		if known {
			base = k.base
			if in.name == "" {
				in.name = k.name
			}
		}
	default: // FHKUP03500100 and any other chart
		k, known := domesticIndex[iscd]
		in.cal, in.lag, in.hour = synth.KRX, 0, 9
		base, vol = synth.Pick(seed, key, 500, 3000), 0.01
		in.volBase, in.amtBase = 300000, 9e6
		if known {
			base = k.base
			if in.name == "" {
				in.name = k.name
			}
		}
	}
	if in.name == "" {
		in.name = iscd
	}
	in.series = synth.NewSeries(seed, key, base, vol)
	in.dec = decimalsFor(base)
	if trID != "FHKST03030100" {
		in.dec = 2
	}
	return in
}

// period is one chart row: a day, week, month or year of open days.
type period struct {
	key         int64
	first, last synth.Day
}

// periodsNewestFirst lists the periods of code D, W, M or Y with open days
// in [lo, hi], newest first.
func periodsNewestFirst(cal synth.Calendar, lo, hi synth.Day, code string) []period {
	var out []period
	for d := hi; d >= lo; d-- {
		if !cal.Open(d) {
			continue
		}
		var key int64
		switch code {
		case "W":
			key = int64(d) - int64((d.Weekday()+6)%7) // the week's Monday
		case "M":
			y, m, _ := d.Civil()
			key = int64(y)*12 + int64(m)
		case "Y":
			y, _, _ := d.Civil()
			key = int64(y)
		default:
			key = int64(d)
		}
		if n := len(out); n > 0 && out[n-1].key == key {
			out[n-1].first = d
			continue
		}
		out = append(out, period{key: key, first: d, last: d})
	}
	return out
}

// periodBar aggregates the daily bars of the open days of p.
func (in *instrument) periodBar(p period) synth.Bar {
	if p.first == p.last {
		return in.bar(p.last)
	}
	var agg synth.Bar
	first := true
	for d := p.first; d <= p.last; d++ {
		if !in.cal.Open(d) {
			continue
		}
		b := in.bar(d)
		if first {
			agg = b
			first = false
			continue
		}
		agg.High = math.Max(agg.High, b.High)
		agg.Low = math.Min(agg.Low, b.Low)
		agg.Close = b.Close
		agg.Volume += b.Volume
	}
	return agg
}
