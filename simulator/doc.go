// Package simulator is Sluice's provider simulator: one HTTP server that
// serves the providers of the registry at their real paths, with their
// real envelopes, status codes and error bodies (as the design's provider
// wire facts, docs/providers.md, describe them), synthetic deterministic
// data, the registry's limits enforced per scope instance, and injectable
// faults. Every later test proves "zero violations" from its statistics.
//
// It is written from the wire facts alone and shares no code with the
// connectors.
//
// # Use
//
//	import _ "github.com/sluicehq/sluice/simulator/all" // every provider
//
//	sim, err := simulator.New(simulator.Options{Registry: reg, RateScale: 10})
//	base, err := sim.Start(ctx, "127.0.0.1:0") // or serve sim.Handler()
//	defer sim.Close()
//	creds := simulator.TestCredentials(reg)     // env-var name → accepted value
//
// Point every provider's base URL at base. A provider whose registry
// base_url has a path prefix is served with and without it.
//
// # Providers
//
// This package is the core: scope windows and quotas, statistics, faults,
// the control API, test credentials and the encoding helpers (JSON, XML,
// number formats) the providers share; simulator/synth makes the
// synthetic data. Each wire format is a package of its own —
// simulator/kis, simulator/ecos, simulator/fred, simulator/upbit,
// simulator/datago, each documenting its paths, errors and data — that
// implements Provider (its routes and handlers, its credential checks and
// shapes, its data) and registers itself by its registry connector name
// (Register, from init); simulator/all links all five. New builds a
// Provider for every connector the registry uses and asks them, in
// connector-name order, to claim each request; the core then applies the
// faults, counts the request, calls the provider's handler and delivers
// the answer. The core never imports a provider.
//
// Known stat codes, series, markets, tr_ids and index codes are answered;
// anything the registry does not declare is "not found" in the
// provider's own way (INFO-200, FRED 400 "The series does not exist.",
// UPBIT 404 "Code not found", KIS OPSQ0002, data.go.kr code 12).
//
// # Limits
//
// Each authenticated call is charged (Host.Admit) to the scope instances
// it counts against: the provider's key/ip/account scopes, plus for
// per-service limits the dataset's service (datago/service/<scope_key>).
// UPBIT charges candles to its ip scope and exchange calls to its account
// scope only; like the registry, which has one upbit/ip instance, the
// simulator counts every client as the same IP. Calls that fail
// authentication are charged to no scope (they count as the provider's
// auth_failures), and KIS /oauth2 calls are not charged to the data
// windows: they have their own limit (Scope.TokenRequest).
// Within a scope instance, from ScopeInstance.Limit (unknown values
// already replaced by the registry defaults):
//
//   - a window of length L and count N accepts a call when fewer than N
//     accepted calls lie in the half-open interval (t−L/RateScale, t];
//   - a minimum interval I accepts a call at least I/RateScale after the
//     last accepted call;
//   - requests_per_day is a daily quota per calendar day in the
//     provider's timezone (reset at local midnight, Options.Now) and is
//     NOT scaled.
//
// A rejected call does not count toward any window or quota (a client
// that keeps retrying is therefore not punished twice), but it counts as
// a violation in the statistics. The answer is the provider's own
// rate-limit error: KIS HTTP 500 rt_cd "1" EGW00201; ECOS ERROR-602 in
// HTTP 200; FRED 429 "Too Many Requests.  Exceeded Rate Limit"; UPBIT 429
// too_many_requests, escalating to 418 (below); data.go.kr code 23
// (per-second window or minimum interval) or 22 (daily quota) as XML in
// HTTP 200.
//
// A provider may block repeat offenders (Host.AdmitBlocking with its
// BlockRule: UPBIT's 418 escalation).
//
// # Statistics
//
// GET /_sim/stats (and Stats) report per scope instance the calls,
// accepted, rejected (violations), the highest count of calls of any
// outcome in any sliding window per declared window (for the daily quota,
// in any calendar day), the same over accepted calls, and the smallest
// gap between consecutive accepted calls and between consecutive calls of
// any outcome; per KIS app key the token requests, issuances, reuses and
// rejections; per provider the requests, authentication failures and
// injected faults. Bookkeeping is exact: a log of call times per window,
// timed by Options.Now, so a fake clock gives exact results.
//
// # Faults
//
// See Fault. Faults are set in Options, by SetFaults, by the `sluice sim
// --fault` flag (ParseFault) or by POST /_sim/faults; dice come from a
// PRNG seeded with Options.Seed, so a sequential client sees the same
// faults on every run. Each applies to a provider, optionally one
// dataset, optionally within a time window (From, Until). Fault.Shape
// answers with a real answer shape of the recorded corpus — a provider's
// own (Shaper: data.go.kr's gateway envelope as XML or JSON with any
// status, its flat JSON error, UPBIT's plain-text 429, KIS's expired
// token and other rt_cd answers, FRED's intermittent "api_key is not
// registered") or one every provider speaks (an HTML maintenance page, an
// empty body); docs/simulator.md lists their bytes. A shape carrying
// data.go.kr's code 22 spends the service's daily quota until local
// midnight, and the statistics count the calls made against a spent
// quota (ScopeStats.CallsAgainstSpentQuota).
//
// # Data
//
// Values are synthetic and deterministic: a function of the seed, the
// series (provider, endpoint, instrument) and the date, so the same
// request gives the same bytes at the same simulated time. Levels are
// smooth seeded curves around realistic bases (KOSPI ~2,500, USD/KRW
// ~1,330, yields ~4 % with two decimals, KRW-BTC in KRW with UPBIT's
// price units), names come from the dataset names ("코스피"), field sets
// and number formats follow the real answers, so sizes and compression
// ratios are realistic (a 50-row KIS index page is about 10 KB).
// Calendars: KRX business days (weekends and fixed-date holidays; lunar
// holidays are not modelled) for KIS domestic, ECOS daily and data.go.kr;
// weekdays for KIS overseas and FRED daily series, whose U.S. holidays
// carry "."; every day for UPBIT. Data appears when the provider would
// publish it (KIS domestic from 09:00 KST the same day, KIS overseas the
// next day 07:00 KST, ECOS daily the next business day 09:00 KST and other
// cycles some weeks after the period (per statistic where its release is
// far from its cycle's: money supply ~45 days, CPI 2, surveys within the
// month), FRED daily the next U.S. business day 16:00 Chicago,
// data.go.kr the next business day 13:00 KST, UPBIT candles as they form).
//
// Each provider package says how it pages (KIS tr_cont, ECOS start/end
// rows, FRED limit/offset, UPBIT to/count, data.go.kr pageNo/numOfRows).
package simulator
