// Package toy is the simulated provider of a throwaway sixth provider,
// "toy", kept in testdata: it is what simulator/<p>/<p>.go holds for a
// real provider (docs/providers.md, Adding a provider) — its routes, its
// credential check and key shape, its synthetic data — registered from
// init. Only tests link it.
package toy

import (
	"net/http"
	"strconv"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/synth"
)

// FirstDay is the toy's first day of data.
var FirstDay = synth.Date(2020, 1, 1)

type provider struct {
	simulator.Stateless
	h      *simulator.Host
	routes map[string][]*registry.Dataset
}

func (p *provider) Route(r *http.Request) (simulator.Route, bool) {
	return p.h.Claim(r, func(path string) (simulator.Route, bool) {
		cands := p.routes[path]
		if len(cands) == 0 {
			return simulator.Route{}, false
		}
		in := p.h.OwnerOr("api_key", r.URL.Query().Get("key"), p.h.First())
		return simulator.Route{Instance: in, Dataset: cands[0], Path: path, Serve: p.serve}, true
	})
}

// serve answers a page of the rows of [from, to], newest first: one a
// day from FirstDay to yesterday by the simulator's clock (a day is
// published the morning after).
func (p *provider) serve(r *http.Request, rt simulator.Route, fraction float64) *simulator.Reply {
	q := r.URL.Query()
	fail := func(status int, msg, outcome string) *simulator.Reply {
		return simulator.JSONReply(status, "application/json", outcome, func(w *simulator.JSON) { w.KStr("error", msg) })
	}
	in := p.h.Owner("api_key", q.Get("key"))
	if in == nil {
		return fail(http.StatusUnauthorized, "unknown key", "auth")
	}
	if !p.h.Admit(r, in, rt.Dataset, fraction).OK {
		return fail(http.StatusTooManyRequests, "slow down", "limit")
	}
	from, ok1 := synth.ParseISO(q.Get("from"))
	to, ok2 := synth.ParseISO(q.Get("to"))
	page, err1 := strconv.Atoi(q.Get("page"))
	size, err2 := strconv.Atoi(q.Get("size"))
	if !ok1 || !ok2 || err1 != nil || err2 != nil || page < 1 || size < 1 || size > 20 {
		return fail(http.StatusBadRequest, "bad from, to, page or size", "error")
	}
	now := p.h.Now().UTC()
	yesterday := synth.Date(now.Year(), now.Month(), now.Day()) - 1
	start, end := max(from, FirstDay), min(to, yesterday)
	total := max(0, int(end-start)+1)
	series := synth.NewSeries(p.h.Seed(), "toy", 100, 0.01)
	return simulator.JSONReply(http.StatusOK, "application/json", "ok", func(w *simulator.JSON) {
		w.KObject("data", func() {
			w.KInt("total", int64(total))
			w.Key("rows")
			w.Open('[')
			for i := (page - 1) * size; i < min(page*size, total); i++ {
				d := end - synth.Day(i)
				w.Open('{')
				w.KStr("day", d.ISO())
				w.KStr("v", simulator.FormatFixed(series.Value(d), 2))
				w.Close('}')
			}
			w.Close(']')
		})
	})
}

func init() {
	simulator.Register(simulator.Registration{Connector: "toy", Credential: simulator.Shaped(simulator.AlnumLower, 24),
		New: func(h *simulator.Host) (simulator.Provider, error) {
			return &provider{h: h, routes: simulator.Index(h.Datasets(), func(ds *registry.Dataset) string { return ds.Request.Path })}, nil
		}})
}
