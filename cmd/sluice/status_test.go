package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/schedules"
	"github.com/sluicehq/sluice/status"
)

// TestStatusRefusesPublicAddressWithoutToken: sluice status will not
// serve a non-loopback address unless an operator token is set, and a
// short token is refused.
func TestStatusRefusesPublicAddressWithoutToken(t *testing.T) {
	t.Setenv(status.EnvOperatorToken, "")
	t.Setenv(status.EnvOperatorTokenFile, "")
	dir := t.TempDir()
	run := func(args ...string) error {
		cmd := newRootCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append([]string{"status", "--no-temporal", "--data-dir", dir}, args...))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cmd.ExecuteContext(ctx)
	}
	if err := run("--addr", "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), status.EnvOperatorToken) {
		t.Errorf("0.0.0.0 without a token: %v", err)
	}
	t.Setenv(status.EnvOperatorToken, "short")
	if err := run("--addr", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "at least") || strings.Contains(err.Error(), "short") {
		t.Errorf("a short token: %v (the message must not quote it)", err)
	}
	t.Setenv(status.EnvOperatorToken, "")
	file := filepath.Join(dir, "tok")
	if err := os.WriteFile(file, []byte("  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(status.EnvOperatorTokenFile, file)
	if err := run("--addr", "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty token file: %v", err)
	}
}

// devTestRegistry is the registry the tests that start `sluice dev` pass
// with --registry: FRED's four and Upbit's five datasets, copied from the
// default registry with its providers.yaml. Each dev start syncs a
// Watch workflow per probed dataset and the schedules into its embedded
// server, under -race: 9 watches and 2 schedules instead of the default
// registry's 193 and 7 keep those starts to seconds of CPU.
const devTestRegistry = "testdata/devregistry"

// devTestSchedules is the number of schedules devTestRegistry asks for.
func devTestSchedules(t *testing.T) int {
	t.Helper()
	reg, err := registry.LoadDir(devTestRegistry, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wants, err := schedules.Wanted(reg, schedules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(wants) < 2 {
		t.Fatalf("%s asks for %d schedules: the test would check little", devTestRegistry, len(wants))
	}
	return len(wants)
}

// TestDevServesStatusAndSyncsSchedules: sluice dev prints the status
// pages' address beside the Web UI's and serves them; the operator page
// takes the token dev keeps in <data-dir>/operator-token (mode 0600) and
// shows its limiters running. It syncs the registry's schedules into its
// embedded server when it starts; they persist with the server's
// database, so the next start finds them unchanged, and a start with a
// new catch-up window updates them. One data directory, three starts:
// the first stays up and serves the status pages.
func TestDevServesStatusAndSyncsSchedules(t *testing.T) {
	for _, env := range []string{envS3Bucket, envS3Endpoint, envDataDir, status.EnvOperatorToken, status.EnvOperatorTokenFile, "SLUICE_WATCH_DB"} {
		t.Setenv(env, "")
	}
	t.Cleanup(func() { registryDir = "" }) // the flag's variable is package state
	n := devTestSchedules(t)
	dir := t.TempDir()
	common := []string{"dev", "--registry", devTestRegistry, "--no-ingest", "--data-dir", dir, "--frontend-addr", "127.0.0.1:0", "--ui-addr", "off",
		"--metrics-addr", "", "--log-level", "error"}
	out := &syncBuffer{}
	cmd := newRootCmd()
	cmd.SetOut(out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(append(append([]string{}, common...), "--status-addr", "127.0.0.1:0", "--catchup-window", "48h"))
	// A bound, not a timing assertion: embedded servers under -race on a
	// busy 2-core machine take minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	devCtx, stopDev := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(devCtx) }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stopDev()
			<-done
		}
	})
	re := regexp.MustCompile(`Status +(http://127\.0\.0\.1:\d+)/ \(operator .*token in (\S+)\)`)
	var m []string
	for m == nil {
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("sluice dev ended: %v\n%s", err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if strings.Contains(out.String(), "Up:") {
			m = re.FindStringSubmatch(out.String())
			if m == nil {
				t.Fatalf("no Status line:\n%s", out.String())
			}
		}
	}
	if !strings.Contains(out.String(), "Web UI") {
		t.Errorf("no Web UI line:\n%s", out.String())
	}
	if want := fmt.Sprintf("synced: %d created, 0 updated, 0 deleted, 0 unchanged", n); !strings.Contains(oneLine(out.String()), want) {
		t.Errorf("first start: no %q:\n%s", want, out.String())
	}
	st, err := os.Stat(m[2])
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file %s: %v %v", m[2], err, st)
	}
	tok, _ := os.ReadFile(m[2])
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "GET", m[1]+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/", ""); code != 200 || !strings.Contains(body, "Dataset status") {
		t.Errorf("GET /: %d", code)
	}
	if code, _ := get("/ops", ""); code != http.StatusUnauthorized {
		t.Errorf("/ops without the token: %d", code)
	}
	code, body := get("/ops", strings.TrimSpace(string(tok)))
	if code != 200 || !strings.Contains(body, `limiter">running<`) {
		t.Errorf("/ops with dev's token: %d, limiters running: %v", code, strings.Contains(body, `limiter">running<`))
	}
	stopDev()
	stopped = true
	if err := <-done; err != nil {
		t.Fatalf("stopping the first start: %v\n%s", err, out.String())
	}

	again := append(append([]string{}, common...), "--once", "--status-addr", "off")
	o, err := runSluice(ctx, append(again, "--catchup-window", "48h")...)
	if want := fmt.Sprintf("synced: 0 created, 0 updated, 0 deleted, %d unchanged", n); err != nil || !strings.Contains(oneLine(o), want) {
		t.Fatalf("second start: %v, want %q\n%s", err, want, o)
	}
	o, err = runSluice(ctx, append(again, "--catchup-window", "72h")...)
	if want := fmt.Sprintf("synced: 0 created, %d updated", n); err != nil || !strings.Contains(oneLine(o), want) || !strings.Contains(oneLine(o), "catch-up window 48h0m0s → 72h0m0s") {
		t.Fatalf("a new catch-up window: %v, want %q\n%s", err, want, o)
	}
}

// TestDevOperatorTokenWrittenAtomically: the token `sluice dev` creates
// under the data dir goes through atomicfile.Write (temporary file 0600,
// fsync, rename, fsync of the directory): mode 0600, no temporary file
// left, and read back the same on the next start.
func TestDevOperatorTokenWrittenAtomically(t *testing.T) {
	t.Setenv(status.EnvOperatorToken, "")
	t.Setenv(status.EnvOperatorTokenFile, "")
	d := dataDir{dir: t.TempDir()}
	var calls []string
	orig := writeSecretFile
	writeSecretFile = func(path string, data []byte, perm os.FileMode) error {
		calls = append(calls, fmt.Sprintf("%s %o", path, perm))
		return orig(path, data, perm)
	}
	t.Cleanup(func() { writeSecretFile = orig })
	tok, file, err := devOperatorToken(d)
	if err != nil || tok == "" || file != d.operatorToken() {
		t.Fatalf("devOperatorToken: %q %q %v", tok, file, err)
	}
	if want := d.operatorToken() + " 600"; len(calls) != 1 || calls[0] != want {
		t.Errorf("atomic writes: %q, want %q", calls, want)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", st, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(file))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
	again, _, err := devOperatorToken(d)
	if err != nil || again != tok || len(calls) != 1 {
		t.Errorf("the second start: %q %v, %d writes", again, err, len(calls))
	}
}
