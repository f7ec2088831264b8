package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/watch"
)

// pwForms are a PostgreSQL URL's three ways of giving a password, each
// with the password pw, over the server at hostPort and database db.
func pwForms(hostPort, db, pw string) []string {
	return []string{
		"postgres://postgres:" + pw + "@" + hostPort + "/" + db + "?sslmode=disable",
		"postgres://postgres@" + hostPort + "/" + db + "?sslmode=disable&password=" + pw,
		"postgresql://postgres@" + hostPort + "/" + db + "?sslpassword=" + pw + "&sslmode=disable",
	}
}

// TestDSNPasswordNeverShown: a password given in the URL, in any of its
// forms, is in neither Describe nor the error of a failed open (closed
// port, missing database), nor in what a store over such a DSN returns.
func TestDSNPasswordNeverShown(t *testing.T) {
	const pw = "Pw-never-shown-9f3"
	for _, dsn := range pwForms("db.example:5432", "sluice", pw) {
		if got := Describe(dsn); strings.Contains(got, pw) || !strings.Contains(got, "db.example:5432/sluice") {
			t.Errorf("Describe(%q) = %q", dsn, got)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	check := func(what, dsn string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s %q: no error", what, dsn)
		}
		for e := err; e != nil; e = errors.Unwrap(e) {
			if strings.Contains(e.Error(), pw) || strings.Contains(fmt.Sprintf("%+v", e), pw) {
				t.Errorf("%s %q: the error shows the password: %v", what, dsn, e)
			}
		}
	}
	for _, dsn := range pwForms("127.0.0.1:1", "sluice", pw) {
		_, err := Open(ctx, Config{DSN: dsn})
		check("open of a closed port", dsn, err)
	}
	// A missing database on the local server (trust auth ignores the
	// password, so the server is reached and refuses the database).
	u, err := url.Parse(pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	probe, err := Open(ctx, Config{DSN: pgtest.AdminURL()})
	if err != nil {
		if pgtest.OnCI() {
			t.Fatalf("no PostgreSQL: %v", err)
		}
		t.Logf("SKIPPING the missing-database case: no PostgreSQL at %s: %v", Describe(pgtest.AdminURL()), err)
	} else {
		probe.Close()
		for _, dsn := range pwForms(u.Host, "sluice_no_such_db", pw) {
			_, err := Open(ctx, Config{DSN: dsn})
			check("open of a missing database", dsn, err)
		}
	}
	// What the store returns (and an activity passes on) never carries
	// the password, even when the driver echoes it.
	echo := fmt.Errorf("reading states: %w", fmt.Errorf("driver: cannot parse `%s`", pwForms("h:5432", "db", pw)[1]))
	r := &redacting{s: failing{err: echo}, secrets: []string{pw}}
	_, err = r.States(ctx, time.Now())
	check("States", "", err)
	_, err = r.Observe(ctx, watch.Probe{Dataset: "d", At: time.Now()}, hourly)
	check("Observe", "", err)
}

// failing is a Store whose States and Observe fail with err.
type failing struct {
	Store
	err error
}

func (f failing) States(context.Context, time.Time, ...string) ([]watch.DatasetState, error) {
	return nil, f.err
}

func (f failing) Observe(context.Context, watch.Probe, watch.Config) (watch.Result, error) {
	return watch.Result{}, f.err
}
