package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"go.temporal.io/server/common/config"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives/timestamp"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// clusterName names the single cluster. It is stored with every namespace,
// so it must never change for an existing database.
const clusterName = "active"

// sqlConfig returns the server's SQL store config for the SQLite file at
// path. WAL journaling lets readers proceed while the writer commits, and
// synchronous=normal drops the fsync per commit: a process crash loses no
// committed data, a power cut may lose the last commits, which is fine for
// a dev setup. The plugin's single connection (MaxConns unset) serializes
// all statements, so SQLite never reports "database is locked".
func sqlConfig(path string, tuned bool) *config.SQL {
	attrs := map[string]string{"mode": "rwc"}
	if tuned {
		attrs["journal_mode"] = "wal"
		attrs["synchronous"] = "normal"
		attrs["busy_timeout"] = "10000"
	}
	return &config.SQL{
		PluginName:        sqliteplugin.PluginName,
		DatabaseName:      path,
		ConnectAttributes: attrs,
	}
}

// prepareDatabase makes sure dbPath holds the Temporal schema and the
// namespace. A new database is built under a temporary name and renamed into
// place only when its schema is complete, so a crash during setup never
// leaves a half-made temporal.db behind.
func prepareDatabase(dbPath, namespace string, retention time.Duration) error {
	if _, err := os.Stat(dbPath); errors.Is(err, fs.ErrNotExist) {
		if err := createDatabase(dbPath); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("checking database %s: %w", dbPath, err)
	}

	ns, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, nil)
	if err != nil {
		return fmt.Errorf("describing namespace %q: %w", namespace, err)
	}
	ns.Detail.Config.Retention = timestamp.DurationPtr(retention)
	// CreateNamespaces leaves an existing namespace as it is.
	if err := sqliteschema.CreateNamespaces(sqlConfig(dbPath, true), ns); err != nil {
		return fmt.Errorf("creating namespace %q in %s: %w", namespace, dbPath, err)
	}
	return nil
}

// createDatabase writes the Temporal schema into a new SQLite file at path.
//
// The server's SQLite plugin keeps every connection it opens in a
// process-wide pool until the process exits, so the idle connection used
// for the schema stays open on the renamed file. It holds no lock and is
// never used again; the server opens its own connection under the final
// name.
func createDatabase(path string) error {
	tmp := path + ".new"
	for _, f := range []string{tmp, tmp + "-journal"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing leftover %s: %w", f, err)
		}
	}
	if err := sqliteschema.SetupSchema(sqlConfig(tmp, false)); err != nil {
		return fmt.Errorf("creating Temporal schema in %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("moving new database into place: %w", err)
	}
	return nil
}
