// Package e2e holds Sluice's end-to-end tests: the daily ingest of the
// default registry on a real embedded Temporal server, against the provider
// simulator, by real `sluice worker` processes writing to a local lake or
// to S3 (versitygw).
//
// The first test builds the sluice binary, without the race detector (or
// takes the one $SLUICE_E2E_BINARY names, as make test builds it
// beforehand), and starts the embedded Temporal server from it (`sluice
// server`, one for the whole package): worker processes are the binary
// users run, and a server inside the race-built test process answers too
// slowly for the limiter's default send tolerance. Each test runs its own
// simulator (in the test process, so it reads the simulator's statistics
// directly), its own lake and its own `sluice worker` processes, in a
// namespace of its own: the limiter and events workflows are singletons
// per namespace, so tests sharing one would share their limiters. The tests:
//
//   - TestFullRegistry: the whole registry for one date, one worker, zero
//     violations, every object present and byte-identical to what the
//     simulator serves;
//   - TestThreeWorkers: three worker processes writing to S3, zero
//     violations, every scope's peak within its declared windows, and the
//     workers' own call counts adding up to the simulator's;
//   - TestWorkerKilled: a worker SIGKILLed while it writes an object; the
//     batch completes on the others with no duplicate and no partial object;
//   - TestProviderDown: FRED down; its datasets fail with the reason, every
//     other dataset succeeds;
//   - TestHalfRate: KIS rejecting at half its declared rate; the scope backs
//     off, the limiter and the ops events record every backoff and the batch
//     (30 KIS datasets) completes;
//   - TestWatchOutage: the watch of four datasets (a test registry at rate
//     scale 40); FRED goes down and comes back; down only after three
//     failed probes, up after two answers, Changes with that evidence,
//     probe calls per scope within the gate's reserve;
//   - TestTokenSharedAcrossMachines: three workers with a data directory
//     each (no shared filesystem) and then three fresh ones share one KIS
//     token through the token keepers: one token request, none refused, no
//     secret in the keeper's history or any log;
//   - TestAnswerShapes: one batch of 13 datasets with every answer shape of
//     the recorded corpus (simulator shape faults) on a dataset of its own:
//     the final shapes fail with their class, the passing ones land and
//     verify, no call goes to a spent quota.
//   - TestDeploy: a backfill and a daily batch started on workers of the
//     previous release (built from git), moved to this build as Worker
//     Deployment version deploy-v1 and then to deploy-v2 (sluice deploy
//     promote), the old workers stopped mid-run each time: zero violations,
//     every chunk verified, the lake exact, every pinned singleton continued
//     as new onto deploy-v2 (docs/deploy.md).
//   - TestAcrossHosts: three workers on hosts of their own (a network
//     namespace each, internal/netns; a data directory each, the lake on
//     versitygw, KIS tokens in the keeper) run a backfill and a daily
//     batch on a two-node Temporal cluster on PostgreSQL while a server
//     node and a worker are SIGKILLed and another worker's network is
//     cut for 30 s: zero violations, every chunk and object verified
//     and stored once, one KIS token, schedules and watches still
//     running, the backfill found by its search attributes. It skips
//     without root (fails on CI), and builds only with the hosts tag
//     (`make test-hosts`: its four minutes are not in make test's budget).
//
// Every test asserts the simulator saw zero violations. The worker-kill,
// provider-down and half-rate tests wait on Temporal's timers (the ingest
// activity's 20-second heartbeat timeout, workflows.IngestActivityOptions;
// the retry policy's backoff; a backed-off limiter) and run side by side;
// the package took about two and a half minutes before TestDeploy, which
// alone took five to six (the slowed UPBIT chunks of its backfill, now
// cleared once its second cut-over is done; and the previous release's
// build when it is not cached yet).
//
// BenchmarkBackfillDefaultRegistry (issue 8 §7, run by `make bench`, never
// by `make test`) runs the default registry's 2016-01-01..2026-08-31
// backfill on one worker process at rate scale 10, with the KIS and ECOS
// daily quotas declared so that it fits in one provider-day, and reports
// planned and made calls, makespan over the planner's prediction, the
// longest history, the worker's peak RSS and the violations; see
// docs/backfill.md.
//
// The package holds tests only; it runs on Linux (it reads /proc and sets
// Pdeathsig on its child processes).
package e2e
