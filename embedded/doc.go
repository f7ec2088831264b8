// Package embedded runs a real Temporal server and the Temporal Web UI inside
// the Sluice process, so a single machine can run Sluice with nothing else
// installed.
//
// What is embedded:
//
//   - go.temporal.io/server (frontend, history, matching and worker services
//     in one process, one history shard) with SQLite persistence through the
//     server's own sqlite plugin;
//   - the Temporal Web UI from github.com/temporalio/ui-server/v2, whose API
//     proxy talks gRPC to the embedded frontend.
//
// Where data lives: the SQLite database is Options.DataDir/temporal.db (with
// its -wal and -shm companions while the server runs). The schema is created
// on first start; on later starts the same file is reused, so namespaces and
// workflow histories survive restarts. A lock file,
// Options.DataDir/temporal.db.lock, keeps two processes from running a server
// on the same database at once. The server's SQLite plugin keeps its
// connections open until the process exits, even after Stop; SQLite's own
// locking keeps that safe.
//
// Ports: the frontend gRPC endpoint listens on Options.FrontendAddr
// (default 127.0.0.1:7233) and the UI on Options.UIAddr (default
// 127.0.0.1:8233; "off" disables it). A port of 0 picks a free port; the
// chosen addresses are reported by Server.FrontendHostPort and Server.UIURL.
// The frontend's HTTP API and the history, matching and worker services
// listen on free ports on the frontend's host, picked at each start. No
// metrics endpoint is served.
//
// The server is configured for a single-machine dev or demo setup: one
// history shard, one task queue partition, SQLite. Production deployments run
// Temporal from the compose stack with PostgreSQL instead and do not use this
// package.
package embedded
