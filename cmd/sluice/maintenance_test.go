package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/notify"
)

// TestMaintenanceCommands: add a provider's window and a dataset's, list
// them, end one, and refuse unknown names and a window without an end.
func TestMaintenanceCommands(t *testing.T) {
	dir := t.TempDir()
	out, errOut, err := runCmd(t, "maintenance", "add", "--data-dir", dir, "--provider", "kis", "--for", "2h", "--reason", "KIS upgrade")
	if err != nil || !strings.Contains(out, "maintenance window 1 of kis") {
		t.Fatalf("add: %q %q %v", out, errOut, err)
	}
	if _, _, err := runCmd(t, "maintenance", "add", "--data-dir", dir, "--dataset", "fred-dgs10",
		"--start", "2030-01-01T00:00:00+09:00", "--end", "2030-01-01T01:00:00+09:00"); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCmd(t, "maintenance", "list", "--data-dir", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ws []notify.Window
	if err := json.Unmarshal([]byte(out), &ws); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(ws) != 2 || ws[0].Provider != "kis" || ws[0].Reason != "KIS upgrade" || ws[1].Dataset != "fred-dgs10" || ws[1].Provider != "fred" {
		t.Fatalf("listed %+v", ws)
	}
	out, _, _ = runCmd(t, "maintenance", "list", "--data-dir", dir)
	if !strings.Contains(out, "open") || !strings.Contains(out, "planned") {
		t.Errorf("table:\n%s", out)
	}
	if out, _, err := runCmd(t, "maintenance", "end", "--data-dir", dir, "1"); err != nil || !strings.Contains(out, "maintenance window 1 of kis ends") {
		t.Fatalf("end: %q %v", out, err)
	}
	out, _, _ = runCmd(t, "maintenance", "list", "--data-dir", dir, "--json")
	if err := json.Unmarshal([]byte(out), &ws); err != nil || len(ws) != 1 {
		t.Fatalf("after end: %s", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--provider", "nope", "--for", "1h"}, "--provider nope: not in the registry"},
		{[]string{"--provider", "kis"}, "exactly one of --end and --for"},
		{[]string{"--provider", "kis", "--dataset", "fred-dgs10", "--for", "1h"}, "exactly one of --provider and --dataset"},
		{[]string{"--provider", "kis", "--end", "tomorrow"}, `--end "tomorrow"`},
		{[]string{"--provider", "kis", "--start", "2030-01-01T01:00:00Z", "--end", "2030-01-01T00:00:00Z"}, "is not after start"},
	} {
		_, _, err := runCmd(t, append([]string{"maintenance", "add", "--data-dir", dir}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if _, _, err := runCmd(t, "maintenance", "end", "--data-dir", dir, "99"); err == nil {
		t.Error("ending an unknown window succeeded")
	}
}

// TestWorkerRefusesABadNotificationsFile: the worker names the file, the
// field and the value before it connects to anything, and never prints
// a sink's URL.
func TestWorkerRefusesABadNotificationsFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/notifications.yaml"
	if err := os.WriteFile(path, []byte("sinks:\n  - {name: ops, type: pager, url_env: TEST_SLUICE_HOOK}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_SLUICE_HOOK", "https://hooks.example.test/T0/s3cret")
	_, _, err := runCmd(t, "worker", "--data-dir", dir, "--notifications", path, "--temporal", "127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), path+`: sinks[0].type: "pager" is not a sink type`) {
		t.Fatalf("err = %v", err)
	}
	if err := os.WriteFile(path, []byte("sinks:\n  - {name: ops, type: webhook, url_env: TEST_SLUICE_NO_SUCH_VAR}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = runCmd(t, "worker", "--data-dir", dir, "--notifications", path, "--temporal", "127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "sinks[0].url_env: TEST_SLUICE_NO_SUCH_VAR") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v", err)
	}
}
