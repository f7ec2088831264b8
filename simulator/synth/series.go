package synth

import (
	"hash/fnv"
	"math"
)

// Series is a deterministic synthetic level (an index, a rate, a price)
// around a base value. Its level is a smooth function of time — a sum of
// seeded sinusoids over a few time scales — and every bar adds seeded
// noise, so neighbouring values look like a market and compress like one.
type Series struct {
	key  uint64
	base float64
	vol  float64
	amp  [4]float64
	per  [4]float64
	ph   [4]float64
}

// periods of the level's components, in days, and their weights (times
// the series' daily volatility).
var (
	componentPeriods = [4]float64{1811, 367, 61, 13}
	componentWeights = [4]float64{22, 9, 4, 1.5}
)

// NewSeries returns the series named key under seed. base is the typical
// level; vol the typical relative daily move (0.01 = 1%).
func NewSeries(seed int64, key string, base, vol float64) Series {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	s := Series{key: mix(uint64(seed) ^ h.Sum64()), base: base, vol: vol}
	for i := range s.amp {
		s.amp[i] = vol * componentWeights[i] * (0.6 + 0.8*s.Uniform(int64(i), 101))
		s.per[i] = componentPeriods[i] * (0.8 + 0.4*s.Uniform(int64(i), 102))
		s.ph[i] = 2 * math.Pi * s.Uniform(int64(i), 103)
	}
	return s
}

// Key returns the series' hashed key, for deriving further values.
func (s Series) Key() uint64 { return s.key }

// Base returns the typical level.
func (s Series) Base() float64 { return s.base }

// Level returns the smooth level at time t, in days since 1970-01-01
// (fractions allowed).
func (s Series) Level(t float64) float64 {
	x := 0.0
	for i := range s.amp {
		x += s.amp[i] * math.Sin(2*math.Pi*t/s.per[i]+s.ph[i])
	}
	return s.base * math.Exp(x)
}

// Uniform returns a deterministic value in [0, 1) for index i and salt k.
func (s Series) Uniform(i int64, k uint64) float64 {
	return float64(mix(s.key^mix(uint64(i)*0x9e3779b97f4a7c15^k))>>11) / (1 << 53)
}

// Normal returns a deterministic, roughly standard normal value for index
// i and salt k (Irwin–Hall with four 16-bit uniforms from one hash).
func (s Series) Normal(i int64, k uint64) float64 {
	h := mix(s.key ^ mix(uint64(i)*0x9e3779b97f4a7c15^(k+0x6a09e667)))
	sum := float64(h&0xffff) + float64(h>>16&0xffff) + float64(h>>32&0xffff) + float64(h>>48)
	return (sum/65536 - 2) * math.Sqrt(3)
}

// Bar is one open/high/low/close bar with a relative volume.
type Bar struct {
	// Open, High, Low and Close are the bar's prices.
	Open, High, Low, Close float64
	// Volume is relative: about 1 for a day, proportional to the bar's
	// length; scale it to the market.
	Volume float64
}

// Bar returns the bar over [start, end) (days since 1970-01-01); idx
// identifies the bar so its noise is stable.
func (s Series) Bar(start, end float64, idx int64) Bar {
	length := end - start
	if length <= 0 {
		length = 1.0 / 1440
	}
	sigma := s.vol * math.Sqrt(math.Min(length, 1))
	o := s.Level(start) * (1 + 0.35*sigma*s.Normal(idx, 1))
	c := s.Level(end) * (1 + 0.35*sigma*s.Normal(idx, 2))
	hi := math.Max(o, c) * (1 + 0.5*sigma*math.Abs(s.Normal(idx, 3)))
	lo := math.Min(o, c) * (1 - 0.5*sigma*math.Abs(s.Normal(idx, 4)))
	vol := length * math.Exp(0.35*s.Normal(idx, 5))
	return Bar{Open: o, High: hi, Low: lo, Close: c, Volume: vol}
}

// Close returns Bar(start, end, idx).Close without computing the rest.
func (s Series) Close(start, end float64, idx int64) float64 {
	length := end - start
	if length <= 0 {
		length = 1.0 / 1440
	}
	sigma := s.vol * math.Sqrt(math.Min(length, 1))
	return s.Level(end) * (1 + 0.35*sigma*s.Normal(idx, 2))
}

// Value returns a single observation for day d: the level at midday with
// a little noise.
func (s Series) Value(d Day) float64 {
	return s.Level(float64(d)+0.5) * (1 + 0.25*s.vol*s.Normal(int64(d), 6))
}

// Hash returns a deterministic 64-bit value for (seed, key, i).
func Hash(seed int64, key string, i int64) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return mix(uint64(seed) ^ h.Sum64() ^ mix(uint64(i)))
}

// mix is the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
