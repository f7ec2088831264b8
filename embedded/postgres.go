package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the setup lock
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	pgplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/common/primitives/timestamp"
	pgschema "go.temporal.io/server/schema/postgresql/v12"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"

	"github.com/sluicehq/sluice/internal/redact"
)

// The two PostgreSQL schemas (namespaces of tables) Temporal's stores live
// in, inside the one database the URL names. Each has its own
// schema_version table, as temporal-sql-tool keeps one per database.
const (
	pgMainSchema       = "temporal"
	pgVisibilitySchema = "temporal_visibility"
)

// pgSetupLock is the key of the session-level advisory lock held while a
// node sets up or upgrades the schemas, creates the namespace and builds its
// server (which writes the cluster's metadata record on first start), so
// two nodes starting at once take turns.
const pgSetupLock int64 = 0x534c5549434554 // "SLUICET"

// pgHistoryShards is the number of history shards of a PostgreSQL-backed
// cluster: fixed for good at the first start, enough to spread workflows
// over a few nodes.
const pgHistoryShards = 8

// postgres is a parsed Options.DatabaseURL.
type postgres struct {
	url      string // as given, for the setup lock's connection
	redacted string // for messages
	store    config.SQL
}

// parsePostgres reads a postgres:// URL: user, password, host, port,
// database and query parameters (passed on as connection attributes, such
// as sslmode). Errors show the URL redacted.
func parsePostgres(raw string) (*postgres, error) {
	shown := redact.DSN(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("DatabaseURL %s is not a URL", shown)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return nil, fmt.Errorf("DatabaseURL %s: scheme %q, want postgres", shown, u.Scheme)
	}
	db := strings.TrimPrefix(u.Path, "/")
	if u.Hostname() == "" || db == "" || strings.Contains(db, "/") {
		return nil, fmt.Errorf("DatabaseURL %s: want postgres://USER:PASSWORD@HOST:PORT/DATABASE", shown)
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	p := &postgres{url: raw, redacted: shown}
	p.store = config.SQL{
		PluginName:        pgplugin.PluginName,
		DatabaseName:      db,
		ConnectAddr:       net.JoinHostPort(u.Hostname(), port),
		User:              u.User.Username(),
		ConnectAttributes: map[string]string{},
	}
	p.store.Password, _ = u.User.Password()
	for k, vs := range u.Query() {
		if len(vs) != 1 {
			return nil, fmt.Errorf("DatabaseURL %s: parameter %q given %d times", shown, k, len(vs))
		}
		if k == "search_path" {
			return nil, fmt.Errorf("DatabaseURL %s: search_path is set by Sluice (schemas %s and %s)", shown, pgMainSchema, pgVisibilitySchema)
		}
		p.store.ConnectAttributes[k] = vs[0]
	}
	return p, nil
}

// storeConfig returns the server's SQL config for one of the two schemas.
func (p *postgres) storeConfig(schemaName string) *config.SQL {
	c := p.store
	c.ConnectAttributes = map[string]string{"search_path": schemaName}
	for k, v := range p.store.ConnectAttributes {
		c.ConnectAttributes[k] = v
	}
	return &c
}

// setupWait bounds how long a node waits for another one's setup.
const setupWait = 5 * time.Minute

// lockPostgres connects to the database and takes the setup lock, waiting
// while another node holds it. The caller runs the returned unlock once its
// server is built.
func (p *postgres) lock(ctx context.Context) (unlock func(), err error) {
	db, err := sql.Open("pgx", p.url)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", p.redacted, p.scrub(err))
	}
	ctx, cancel := context.WithTimeout(ctx, setupWait)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to %s: %w", p.redacted, p.scrub(err))
	}
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", pgSetupLock); err != nil {
		conn.Close()
		db.Close()
		return nil, fmt.Errorf("taking the schema setup lock on %s: %w", p.redacted, p.scrub(err))
	}
	return func() {
		// Closing the session releases the lock too, if this fails.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(ctx, "SELECT pg_advisory_unlock($1)", pgSetupLock)
		conn.Close()
		db.Close()
	}, nil
}

// prepare creates the two schemas if missing, sets up or upgrades
// Temporal's tables in each as temporal-sql-tool's setup-schema and
// update-schema do, and creates the namespace with Sluice's search
// attributes if it is missing. The caller holds the setup lock.
func (p *postgres) prepare(ctx context.Context, logger log.Logger, namespace string, retention time.Duration) error {
	db, err := sql.Open("pgx", p.url)
	if err != nil {
		return fmt.Errorf("opening %s: %w", p.redacted, p.scrub(err))
	}
	defer db.Close()
	for _, s := range []struct {
		schema, assets, version string
	}{
		{pgMainSchema, "postgresql/v12/temporal", pgschema.Version},
		{pgVisibilitySchema, "postgresql/v12/visibility", pgschema.VisibilityVersion},
	} {
		if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+s.schema); err != nil {
			return fmt.Errorf("creating schema %s in %s: %w", s.schema, p.redacted, p.scrub(err))
		}
		var versioned bool
		q := "SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'schema_version')"
		if err := db.QueryRowContext(ctx, q, s.schema).Scan(&versioned); err != nil {
			return fmt.Errorf("reading schema %s's version in %s: %w", s.schema, p.redacted, p.scrub(err))
		}
		if err := p.migrate(s.schema, s.assets, s.version, !versioned, logger); err != nil {
			return err
		}
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, SearchAttributes)
	if err != nil {
		return fmt.Errorf("describing namespace %q: %w", namespace, err)
	}
	ns.Detail.Config.Retention = timestamp.DurationPtr(retention)
	// CreateNamespaces (the server's, for any SQL store despite its
	// package) leaves an existing namespace as it is.
	if err := sqliteschema.CreateNamespaces(p.storeConfig(pgMainSchema), ns); err != nil {
		return fmt.Errorf("creating namespace %q in %s: %w", namespace, p.redacted, p.scrub(err))
	}
	return nil
}

// migrate sets up schemaName (when fresh) at the embedded schema's version
// and applies any newer versioned updates.
func (p *postgres) migrate(schemaName, assets, version string, fresh bool, logger log.Logger) error {
	conn, err := sqltool.NewConnection(p.storeConfig(schemaName), logger)
	if err != nil {
		return fmt.Errorf("connecting to %s for schema %s: %w", p.redacted, schemaName, p.scrub(err))
	}
	defer conn.Close()
	if fresh {
		task := schema.NewSetupSchemaTask(conn, &schema.SetupConfig{SchemaName: assets, InitialVersion: version}, logger)
		if err := task.Run(); err != nil {
			return fmt.Errorf("setting up schema %s (Temporal %s %s) in %s: %w", schemaName, assets, version, p.redacted, p.scrub(err))
		}
	}
	task := schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{DBName: p.store.DatabaseName, SchemaName: assets, TargetVersion: version}, logger)
	if err := task.Run(); err != nil {
		return fmt.Errorf("updating schema %s to Temporal %s %s in %s: %w", schemaName, assets, version, p.redacted, p.scrub(err))
	}
	return nil
}

// scrub removes the URL's secrets from an error a driver wrote.
func (p *postgres) scrub(err error) error {
	if err == nil {
		return nil
	}
	return redact.Error(err, redact.DSNSecrets(p.url)...)
}

// errNoPostgres is returned by cluster-only options without DatabaseURL.
var errNoPostgres = errors.New("needs DatabaseURL: a cluster shares its persistence in PostgreSQL")
