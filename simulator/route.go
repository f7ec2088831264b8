package simulator

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/registry"
)

type routeKind int

const (
	routeNone routeKind = iota
	routeKISToken
	routeKISRevoke
	routeKISData
	routeECOS
	routeFRED
	routeUpbitCandles
	routeUpbitExchange
	routeDatago
	routeDatagoUnknown // a path under a known data.go.kr service directory
)

// route is where a request goes: which provider, and the dataset it asks
// for when one can be told from the request.
type route struct {
	kind routeKind
	prov *provState
	ds   *registry.Dataset
	path string // the request path without the provider's base-URL prefix
}

// stripPrefixes yields the request path as is and without each base-URL
// prefix of the providers served by conn.
func (s *Simulator) pathsFor(conn, p string) []string {
	out := []string{p}
	for _, ps := range s.byConn[conn] {
		if ps.prefix != "" && strings.HasPrefix(p, ps.prefix+"/") {
			out = append(out, p[len(ps.prefix):])
		}
	}
	return out
}

// route maps a request to a provider and dataset without authenticating it.
func (s *Simulator) route(r *http.Request) route {
	p := r.URL.Path
	q := r.URL.Query()

	for _, path := range s.pathsFor("kis", p) {
		switch path {
		case "/oauth2/tokenP":
			if ps := s.firstOf("kis"); ps != nil {
				return route{kind: routeKISToken, prov: ps, path: path}
			}
		case "/oauth2/revokeP":
			if ps := s.firstOf("kis"); ps != nil {
				return route{kind: routeKISRevoke, prov: ps, path: path}
			}
		}
		if cands := s.kisRoutes[path]; len(cands) > 0 {
			ps := s.credentialOwner("kis", "app_key", r.Header.Get("appkey"))
			if ps == nil {
				ps = s.byID[cands[0].Provider]
			}
			trID := r.Header.Get("tr_id")
			ds := bestDataset(cands, ps.p.ID, q, func(d *registry.Dataset) bool { return d.Request.TrID == trID })
			return route{kind: routeKISData, prov: ps, ds: ds, path: path}
		}
	}

	for _, path := range s.pathsFor("ecos", p) {
		if !strings.HasPrefix(path, "/api/") {
			continue
		}
		ps := s.firstOf("ecos")
		if ps == nil {
			break
		}
		seg := strings.Split(strings.TrimPrefix(path, "/api/"), "/")
		if len(seg) > 1 {
			if owner := s.credentialOwner("ecos", "api_key", seg[1]); owner != nil {
				ps = owner
			}
		}
		var ds *registry.Dataset
		if len(seg) > 6 {
			ds = bestECOSDataset(s.ecosStats[seg[6]], ps.p.ID, seg)
		}
		return route{kind: routeECOS, prov: ps, ds: ds, path: path}
	}

	for _, path := range s.pathsFor("fred", p) {
		if path != "/fred/series/observations" {
			continue
		}
		ps := s.credentialOwner("fred", "api_key", q.Get("api_key"))
		if ps == nil {
			ps = s.firstOf("fred")
		}
		if ps == nil {
			break
		}
		ds := bestDataset(s.fredSeries[q.Get("series_id")], ps.p.ID, nil, nil)
		return route{kind: routeFRED, prov: ps, ds: ds, path: path}
	}

	for _, path := range s.pathsFor("upbit", p) {
		ps := s.firstOf("upbit")
		if ps == nil {
			break
		}
		switch {
		case strings.HasPrefix(path, "/v1/candles/"):
			cands := s.upbitMarkets[q.Get("market")]
			ds := bestDataset(cands, ps.p.ID, nil, func(d *registry.Dataset) bool {
				return d.Request.Path == "" || d.Request.Path == path
			})
			return route{kind: routeUpbitCandles, prov: ps, ds: ds, path: path}
		case path == "/v1/accounts" || path == "/v1/orders/chance":
			return route{kind: routeUpbitExchange, prov: ps, path: path}
		}
	}

	for _, path := range s.pathsFor("datago", p) {
		if cands := s.datagoRoutes[path]; len(cands) > 0 {
			key := q.Get("serviceKey")
			if key == "" {
				key = q.Get("ServiceKey")
			}
			ps := s.credentialOwner("datago", "service_key", key)
			if ps == nil {
				ps = s.byID[cands[0].Provider]
			}
			ds := bestDataset(cands, ps.p.ID, q, nil)
			if ds == nil {
				ds = cands[0]
				ps = s.byID[ds.Provider]
			}
			return route{kind: routeDatago, prov: ps, ds: ds, path: path}
		}
		if s.datagoDirs[pathDir(path)] {
			if ps := s.firstOf("datago"); ps != nil {
				return route{kind: routeDatagoUnknown, prov: ps, path: path}
			}
		}
	}
	return route{}
}

// bestDataset picks, among the candidates of provider prov that pass
// accept (nil = all), the one whose fixed (placeholder-free) parameters
// agree most with the query; ties go to the first by id.
func bestDataset(cands []*registry.Dataset, prov string, q url.Values, accept func(*registry.Dataset) bool) *registry.Dataset {
	var best *registry.Dataset
	bestScore := -1
	for _, ds := range cands {
		if ds.Provider != prov || (accept != nil && !accept(ds)) {
			continue
		}
		score := 0
		for _, p := range ds.Request.Params {
			if strings.Contains(p.Value, "{") {
				continue
			}
			if v, ok := q[p.Name]; ok && len(v) > 0 && v[0] == p.Value {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = ds, score
		}
	}
	return best
}

// bestECOSDataset matches StatisticSearch path segments (service, key,
// type, lang, start, end, stat, cycle, from, to, items…) against ECOS
// datasets: same stat code, then the most matching cycle and item codes.
func bestECOSDataset(cands []*registry.Dataset, prov string, seg []string) *registry.Dataset {
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
