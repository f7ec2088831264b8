// Package schedules keeps a Temporal namespace's Schedules in step with
// the registry: schedules as code.
//
// Each group of datasets that share a provider and a schedule (the
// registry's ingest.schedule, a cron line in the provider's timezone) is
// one Temporal Schedule, id sluice-<provider>-<when> (sluice-ecos-0900-daily,
// sluice-kis-1830-mon-fri), whose action starts the DailyIngest workflow
// for the group's datasets. Sync plans what to create, update and delete
// (Plan, a pure function of what the registry wants and what the namespace
// holds) and applies it:
//
//   - Sluice marks the schedules it creates with the memo
//     sluice-managed-by=sluice and only ever touches those: any other
//     schedule in the namespace is left alone, and one holding an id
//     Sluice wants is a conflict, reported, never overwritten;
//   - a schedule whose spec, policies or action differ is updated in
//     place, keeping its paused state and note (a person's pause
//     outlives a sync); one that matches is left unchanged, so a second
//     sync changes nothing;
//   - deletes come last and only when every other step succeeded and the
//     namespace's schedules could be listed: a failed step never prunes.
//
// The policies are explicit, never Temporal's defaults (which differ
// between the server and the SDKs' documentation):
//
//   - catch-up window Options.CatchupWindow (DefaultCatchupWindow, four
//     days): when the Temporal service was down, runs it missed within
//     the window are taken when it comes back; older ones are skipped;
//   - overlap BUFFER_ALL: a group never runs twice at once; a run that
//     fires while the previous one is still going (or still waiting for a
//     worker, so a weekend with every worker down) waits for it and then
//     runs, each missed date in turn. A backfill follows the same policy.
//
// A run's logical date comes from its nominal time (workflows.LogicalDate
// of TemporalScheduledStartTime in the provider's timezone: the day before
// the nominal date, as `make run` ingests yesterday), so a catch-up or a
// `temporal schedule backfill` ingests the dates they stand for, under the
// keys `sluice ingest --date` writes.
package schedules
