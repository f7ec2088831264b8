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

// TestDevServesStatus: sluice dev prints the status pages' address beside
// the Web UI's and serves them; the operator page takes the token dev keeps
// in <data-dir>/operator-token (mode 0600) and shows its limiters running.
func TestDevServesStatus(t *testing.T) {
	for _, env := range []string{envS3Bucket, envS3Endpoint, envDataDir, status.EnvOperatorToken, status.EnvOperatorTokenFile, "SLUICE_WATCH_DB"} {
		t.Setenv(env, "")
	}
	dir := t.TempDir()
	out := &syncBuffer{}
	cmd := newRootCmd()
	cmd.SetOut(out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"dev", "--no-ingest", "--data-dir", dir, "--frontend-addr", "127.0.0.1:0", "--ui-addr", "off",
		"--status-addr", "127.0.0.1:0", "--metrics-addr", "", "--log-level", "error"})
	// A bound, not a timing assertion: embedded servers and 193
	// watches under -race on a busy 2-core machine take minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	re := regexp.MustCompile(`Status +(http://127\.0\.0\.1:\d+)/ \(operator .*token in (\S+)\)`)
	var m []string
	for m == nil {
		select {
		case err := <-done:
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
