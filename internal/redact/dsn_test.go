package redact

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestDSN(t *testing.T) {
	const pw = "s3cr3t-Pass"
	for _, dsn := range []string{
		"postgres://sluice:" + pw + "@db:5432/sluice",
		"postgresql://sluice@db:5432/sluice?password=" + pw + "&sslmode=disable",
		"postgres://sluice@db:5432/sluice?sslmode=verify-full&sslpassword=" + pw,
		"postgres://sluice:" + pw + "@db:5432/sluice?password=" + pw,
		"postgres://sluice:" + pw + "@db:bad port/%zz",
		"host=db user=sluice password=" + pw + " dbname=sluice",
		"host=db user=sluice password='" + pw + " x' sslpassword=" + pw,
	} {
		got := DSN(dsn)
		if strings.Contains(got, pw) || !strings.Contains(got, Marker) {
			t.Errorf("DSN(%q) = %q", dsn, got)
		}
		if !strings.Contains(got, "db") {
			t.Errorf("DSN(%q) = %q lost the host", dsn, got)
		}
		secs := DSNSecrets(dsn)
		if v := Values("driver said: "+pw+" and "+strings.ReplaceAll(pw, "-", "%2D"), secs...); strings.Contains(v, pw) || strings.Contains(v, "%2D") {
			t.Errorf("DSNSecrets(%q) = %q: %q", dsn, secs, v)
		}
	}
	if got := DSN("postgres://sluice@db:5432/sluice?sslmode=disable"); got != "postgres://sluice@db:5432/sluice?sslmode=disable" {
		t.Errorf("a DSN without secrets changed: %s", got)
	}
}

func TestError(t *testing.T) {
	const pw = "s3cr3t-Pass"
	base := errors.New("failed to connect: password " + pw + " refused")
	err := Error(fmt.Errorf("opening: %w", base), pw)
	if strings.Contains(err.Error(), pw) || errors.Unwrap(err) != nil {
		t.Errorf("Error = %v (cause %v)", err, errors.Unwrap(err))
	}
	// A cause that hides a secret its wrapper does not show is cut too.
	hidden := fmt.Errorf("opening: %w", &quiet{base})
	if err := Error(hidden, pw); errors.Unwrap(err) != nil {
		t.Errorf("the cause survived: %v", errors.Unwrap(err))
	}
	clean := fmt.Errorf("opening: %w", errors.New("no such host"))
	if Error(clean, pw) != clean || Error(nil, pw) != nil {
		t.Error("an error without the secret was not returned as is")
	}
}

type quiet struct{ err error }

func (q *quiet) Error() string { return "quiet" }
func (q *quiet) Unwrap() error { return q.err }
