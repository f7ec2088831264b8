// Package simulator is Sluice's provider simulator: one HTTP server that
// serves the five providers of the registry — KIS, ECOS, FRED, UPBIT and
// data.go.kr (by each provider's connector) — at their real paths, with
// their real envelopes, status codes and error bodies (as the design's
// provider wire facts, providers.md, describe them), synthetic
// deterministic data,
// the registry's limits enforced per scope instance, and injectable
// faults. Every later test proves "zero violations" from its statistics.
//
// It is written from the wire facts alone and shares no code with the
// connectors.
//
// # Use
//
//	sim, err := simulator.New(simulator.Options{Registry: reg, RateScale: 10})
//	base, err := sim.Start(ctx, "127.0.0.1:0") // or serve sim.Handler()
//	defer sim.Close()
//	creds := simulator.TestCredentials(reg)     // env-var name → accepted value
//
// Point every provider's base URL at base. A provider whose registry
// base_url has a path prefix is served with and without it.
//
// # Routing
//
//   - KIS: POST /oauth2/tokenP, POST /oauth2/revokeP, and GET on every path
//     a kis dataset declares, told apart by the tr_id header (an unknown
//     tr_id gets rt_cd "1", OPSQ0002). The provider is found by app key.
//   - ECOS: GET /api/StatisticSearch/{KEY}/{json|xml}/{kr|en}/{start}/{end}/
//     {STAT}/{CYCLE}/{from}/{to}/{items…}; provider by key.
//   - FRED: GET /fred/series/observations; provider by api_key.
//   - UPBIT: GET /v1/candles/{days,weeks,months,minutes/N} (no auth; the
//     ip scope) and the exchange endpoints GET /v1/accounts and
//     GET /v1/orders/chance (HS512 JWT; the account scope).
//   - data.go.kr: every path a datago dataset declares, key in serviceKey
//     or ServiceKey; the dataset (and its scope_key service) is found by
//     path, then by the best match of its fixed parameters.
//
// Known stat codes, series, markets, tr_ids and index codes are answered;
// anything the registry does not declare is "not found" in the
// provider's own way (INFO-200, FRED 400 "The series does not exist.",
// UPBIT 404 "Code not found", KIS OPSQ0002, data.go.kr code 12).
//
// # Limits
//
// Each authenticated call is charged to the scope instances it counts
// against: the provider's key/ip/account scopes, plus for per-service
// limits the dataset's service (datago/service/<scope_key>). UPBIT charges
// candles to its ip scope and exchange calls to its account scope only;
// like the registry, which has one upbit/ip instance, the simulator counts
// every client as the same IP. Calls that fail authentication are charged
// to no scope (they count as the provider's auth_failures), and KIS
// /oauth2 calls are not charged to the data windows: they have their own
// limit (below).
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
// KIS tokens: /oauth2/tokenP more than once per minute (÷ RateScale) per
// app key answers 403 EGW00133 and counts as a violation; a token lives
// 86,400 s (not scaled) and a request within 6 h of the last issuance
// returns the same token. Data calls with an unknown or revoked token get
// HTTP 500 EGW00121, with an expired one EGW00123. ExpireKISTokens and
// InvalidateKISTokens (POST /_sim/kis/expire-tokens[?invalidate=1]) force
// both for tests.
//
// UPBIT escalation (a simulator rule): every 429 is a strike; 5 strikes
// within 10 s block the scope for 10 s, doubling with each further block
// up to 1 h (all ÷ RateScale). While blocked every call answers 418 and
// counts as a violation. A 429 caused by a RejectAtFraction fault is a
// strike too: the provider cannot tell. Every UPBIT answer carries
// "Remaining-Req: group=candles; min=1800; sec=N" (group default for the
// exchange endpoints), N being what the second window has left.
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
// faults on every run.
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
// next day 07:00 KST, ECOS daily the next day 09:00 KST and other cycles
// some weeks after the period, FRED daily the next day 16:00 Chicago,
// data.go.kr the next business day 13:00 KST, UPBIT candles as they form).
//
// KIS charts answer at most 50 rows, newest first; a response header
// tr_cont "F" (first page) or "M" (middle) means more, "D" (only page)
// or "E" (last page) means done; ask again with the same query and
// request header tr_cont: N for the next page. Narrowing FID_INPUT_DATE_2
// pages statelessly too. data.go.kr pages with pageNo/numOfRows; a page
// of one item carries it as an object, an empty result answers resultCode
// 03 with items "". ECOS pages with start/end rows; FRED with
// limit/offset; UPBIT with to (exclusive) and count ≤ 200.
package simulator
