package connector

import (
	"context"
	"strings"

	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

// Skeleton is the one connector every provider fills in. It runs what
// every provider's Fetch and Probe share — the dataset checked
// (Base.Dataset), the request planned by the provider, a planning error
// failed (Base.Fail), the exchange sent (Base.Do), the answer's Next set,
// a probe's answer read (ReadProbe) — and leaves to the provider's Steps
// what differs: the request, how it is sent, how its answers page and what
// a probe asks for.
//
// A provider's connector is a struct embedding Skeleton, built by
// Assemble or, when it keeps state of its own (the KIS token), by
// NewSkeleton.
type Skeleton struct {
	base  *Base
	steps Steps
}

// Steps are what a provider fills in of its connector.
type Steps struct {
	// Needs names the dataset request fields (as the registry spells
	// them: path, tr_id, stat_code, series_id, market) without which the
	// provider cannot be asked: a dataset that leaves one empty fails
	// BadRequest, naming them all, before Plan runs.
	Needs []string
	// Plan builds the request for a dataset Base.Dataset accepted (call,
	// req.Dataset): its URL with credentials, headers, body, format and
	// classifier, and how it is sent and paged. An error fails the call
	// before anything is sent (Base.Fail, AsError, status 0): a
	// credential unavailable, a range or parameter the provider cannot
	// ask.
	Plan func(b *Base, call permit.Call, req Request) (Plan, error)
	// Probe returns the request a probe of ds sends: the provider's
	// cheapest window ending today and its row limit. ds may be nil (the
	// probe then fails as Fetch does).
	Probe func(b *Base, ds *registry.Dataset) Request
	// Newest reports whether a probe's answer, read whole, holds the
	// dataset's newest period (ProbeAnswer.Newest); nil: it is not known
	// to.
	Newest func(resp *Response) bool
}

// Plan is one request a provider's Steps.Plan built.
type Plan struct {
	// Exchange is the request Base.Do sends.
	Exchange
	// Send, when set, sends the exchange in place of Base.Do (KIS adds
	// its access token and replaces a rejected one). It returns the
	// answer or a classified error.
	Send func(ctx context.Context, x Exchange) (*Response, error)
	// Pages, when set, sets the Next of a successful answer; nil means
	// the answer's head decides (PagesByMore).
	Pages func(resp *Response)
}

// NewSkeleton returns the skeleton that runs a provider's steps on b. A
// Steps.Needs naming a field it does not know is a programming error: it
// panics.
func NewSkeleton(b *Base, steps Steps) Skeleton {
	known := requestFields(registry.Request{})
	for _, f := range steps.Needs {
		if _, ok := known[f]; !ok {
			panic("connector: Steps.Needs names an unknown request field " + f)
		}
	}
	return Skeleton{base: b, steps: steps}
}

// Skeletal is the pointer type of a provider's connector built by
// Assemble: a struct that embeds Skeleton.
type Skeletal[C any] interface {
	*C
	skeleton() *Skeleton
}

func (s *Skeleton) skeleton() *Skeleton { return s }

// Assemble returns a provider's connector of type C, a struct embedding
// Skeleton and nothing else to set up: its Base built from p and opts
// (NewBase), its steps those of the provider.
func Assemble[C any, PC Skeletal[C]](p *registry.Provider, opts Options, steps Steps) (PC, error) {
	b, err := NewBase(p, opts)
	if err != nil {
		return nil, err
	}
	c := PC(new(C))
	*c.skeleton() = NewSkeleton(b, steps)
	return c, nil
}

// FactoryOf returns the Factory of a provider's New (Register).
func FactoryOf[C Connector](newC func(*registry.Provider, Options) (C, error)) Factory {
	return func(p *registry.Provider, opts Options) (Connector, error) {
		c, err := newC(p, opts)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// Base returns the Base the connector sends through.
func (s *Skeleton) Base() *Base { return s.base }

// Fetch builds, signs and sends the request for a dataset and date range
// and returns the raw answer (Connector.Fetch); the provider's Steps.Plan
// documents its request and paging.
func (s *Skeleton) Fetch(ctx context.Context, req Request) (*Response, error) {
	return s.fetch(ctx, req, false)
}

// Probe sends the provider's probe request (Steps.Probe) and returns its
// answer, at most MaxProbeBytes of it (Connector.Probe).
func (s *Skeleton) Probe(ctx context.Context, ds *registry.Dataset) (ProbeAnswer, error) {
	resp, err := s.fetch(ctx, s.steps.Probe(s.base, ds), true)
	return ReadProbe(resp, err, err == nil && s.steps.Newest != nil && s.steps.Newest(resp))
}

func (s *Skeleton) fetch(ctx context.Context, req Request, probe bool) (*Response, error) {
	call, ds, derr := s.base.Dataset(req, probe)
	if derr != nil {
		return nil, derr
	}
	if missing(req.Dataset.Request, s.steps.Needs) {
		return nil, s.base.Fail(call, 0, &Error{Class: BadRequest,
			Message: "the dataset needs request." + strings.Join(s.steps.Needs, " and request.")})
	}
	p, err := s.steps.Plan(s.base, call, req)
	if err != nil {
		return nil, s.base.Fail(call, 0, AsError(err))
	}
	if p.Exchange.Bounds == (registry.Bounds{}) {
		p.Exchange.Bounds = ds.Bounds // the dataset's own override its provider's
	}
	send := p.Send
	if send == nil {
		send = s.base.Do
	}
	resp, err := send(ctx, p.Exchange)
	if err != nil {
		return nil, err
	}
	if p.Pages != nil {
		p.Pages(resp)
	} else {
		PagesByMore(req, resp)
	}
	return resp, nil
}

// missing reports whether r leaves any of the fields empty.
func missing(r registry.Request, fields []string) bool {
	values := requestFields(r)
	for _, f := range fields {
		if values[f] == "" {
			return true
		}
	}
	return false
}

// requestFields are the request fields Steps.Needs may name, by their
// registry names.
func requestFields(r registry.Request) map[string]string {
	return map[string]string{"path": r.Path, "tr_id": r.TrID, "stat_code": r.StatCode,
		"series_id": r.SeriesID, "market": r.Market}
}

// PagesByMore sets the Next of an answer whose head tells whether more
// pages follow (Response.More: ECOS list_total_count and FRED count come
// before the rows, KIS tr_cont is a header): the same request with
// Page + 1 while More, once the body was read to its end.
func PagesByMore(req Request, resp *Response) {
	more := resp.More
	resp.Next = NextByPage(req, Watch(resp), func() (bool, error) { return more, nil })
}

// LastDays returns a Steps.Probe that asks for the last days days of a
// dataset, ending today in the provider's timezone (Base.Today), at most
// limit rows (0: the provider's default).
func LastDays(days, limit int) func(*Base, *registry.Dataset) Request {
	return func(b *Base, ds *registry.Dataset) Request {
		today := b.Today()
		return Request{Dataset: ds, From: today.AddDate(0, 0, -days), To: today, Limit: limit}
	}
}

// HoldsNewest is the Steps.Newest of a provider whose probe answer always
// holds the dataset's newest period (newest first, or a window that ends
// with it).
func HoldsNewest(*Response) bool { return true }

// Format returns the format a dataset asks of its provider: its
// request.format, json when it names none.
func Format(r registry.Request) string {
	if r.Format == "" {
		return "json"
	}
	return r.Format
}

// QueryKey returns the query parameter that carries the credential of an
// auth role (Credential): named by the provider's auth.param, else param.
func (b *Base) QueryKey(role, param string) (registry.Param, error) {
	key, err := b.Credential(role)
	if err != nil {
		return registry.Param{}, err
	}
	if b.provider.Auth.Param != "" {
		param = b.provider.Auth.Param
	}
	return registry.Param{Name: param, Value: key}, nil
}
