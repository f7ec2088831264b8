// Package pgtest gives tests a PostgreSQL database of their own: created
// on the server SLUICE_TEST_POSTGRES_URL names (default: the machine's
// local server at 127.0.0.1:5432, trust auth), dropped when the test ends.
//
// Where no server answers, a test skips with a message saying how to
// start one — except on CI (CI set), where it fails: CI must never pass
// by skipping the PostgreSQL half of a conformance suite.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// EnvURL names the server (and a database to connect to while creating
// the test's own): postgres://user@host:port/db.
const EnvURL = "SLUICE_TEST_POSTGRES_URL"

// DefaultURL is the local server of a development machine and CI.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL is the server URL tests use.
func AdminURL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return DefaultURL
}

// OnCI reports whether the tests run on CI, where an unreachable
// PostgreSQL is a failure, not a skip.
func OnCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}

// Database creates an empty database for the test and returns its URL; it
// is dropped (connections closed) in t.Cleanup.
func Database(t testing.TB) string {
	t.Helper()
	admin := AdminURL()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db := connect(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "sluice_test_" + hex.EncodeToString(b[:])
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		db.Close()
		t.Fatalf("creating test database %s on %s: %v", name, redact(admin), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping test database %s: %v", name, err)
		}
		db.Close()
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", EnvURL, err)
	}
	u.Path = "/" + name
	return u.String()
}

// connect opens the admin connection, skipping the test (failing it on
// CI) when no server answers.
func connect(t testing.TB) *sql.DB {
	t.Helper()
	admin := AdminURL()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", admin)
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		msg := fmt.Sprintf("PostgreSQL is not reachable at %s (%v): start it (pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start) or point %s at a server", redact(admin), err, EnvURL)
		if OnCI() {
			t.Fatal(msg + "; on CI (CI is set) this is a failure, not a skip")
		}
		t.Skip("SKIPPING the PostgreSQL tests: " + msg)
	}
	return db
}

func redact(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}

// OwnedDatabase creates a login role with a random password and an empty
// database it owns, and returns the database's URL, carrying that
// password, and the password, for tests that check a password never
// shows. The database is dropped, then the role, in t.Cleanup. (On a
// trust-auth server the password is not checked, but it is still sent.)
func OwnedDatabase(t testing.TB) (dbURL, password string) {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	role := "sluice_role_" + hex.EncodeToString(b[:])
	var p [12]byte
	_, _ = rand.Read(p[:])
	password = "pw" + hex.EncodeToString(p[:])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := AdminURL()
	db := connect(t)
	// Cleanups run last first: the role's, registered first, runs after
	// the database that depends on it is dropped.
	if _, err := db.ExecContext(ctx, "CREATE ROLE "+role+" LOGIN PASSWORD '"+password+"'"); err != nil {
		db.Close()
		t.Fatalf("creating role %s: %v", role, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP ROLE IF EXISTS "+role); err != nil {
			t.Errorf("dropping role %s: %v", role, err)
		}
		db.Close()
	})
	name := "sluice_test_" + hex.EncodeToString(b[:])
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name+" OWNER "+role); err != nil {
		t.Fatalf("creating test database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", EnvURL, err)
	}
	u.Path = "/" + name
	u.User = url.UserPassword(role, password)
	return u.String(), password
}
