package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestConsoleLoggerKeepsInfoOffTheConsole: at the default level info and
// debug records go to the log file only, warnings and errors to both; at
// --log-level debug the console gets everything too.
func TestConsoleLoggerKeepsInfoOffTheConsole(t *testing.T) {
	for _, c := range []struct {
		level              string
		consoleInfo, debug bool
	}{{"info", false, false}, {"warn", false, false}, {"debug", true, true}} {
		path := filepath.Join(t.TempDir(), "logs", "dev.log")
		var console bytes.Buffer
		log, closeLog, err := consoleLogger(c.level, path, &console)
		if err != nil {
			t.Fatal(err)
		}
		log.With("dataset", "d").Info("watch change", "to", "up")
		log.Debug("limiter detail")
		log.Warn("a daily run took more calls than the budget gate counts for it")
		closeLog()
		file, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(file), `level=INFO msg="watch change" dataset=d to=up`) || !strings.Contains(string(file), "level=WARN") {
			t.Errorf("%s: the log file lacks the info or the warning:\n%s", c.level, file)
		}
		if got := strings.Contains(console.String(), "watch change"); got != c.consoleInfo {
			t.Errorf("%s: info on the console %v, want %v:\n%s", c.level, got, c.consoleInfo, console.String())
		}
		if got := strings.Contains(console.String(), "limiter detail"); got != c.debug {
			t.Errorf("%s: debug on the console %v, want %v", c.level, got, c.debug)
		}
		if !strings.Contains(console.String(), "level=WARN") {
			t.Errorf("%s: the warning a user must act on is not on the console:\n%s", c.level, console.String())
		}
	}
	if _, _, err := consoleLogger("loud", filepath.Join(t.TempDir(), "x.log"), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), `--log-level "loud"`) {
		t.Errorf("a bad level: %v", err)
	}
}

// TestDevConsole runs sluice dev --once over two datasets with the watch
// running (on devTestRegistry's datasets): the console shows the addresses, the log file's path, the
// summary with each provider's bound and the ratio to it, and the watch
// in one line; the info lines (the watch's changes among them) go to the
// log file and not to the console.
func TestDevConsole(t *testing.T) {
	for _, env := range []string{envS3Bucket, envS3Endpoint, envDataDir, "SLUICE_WATCH_DB"} {
		t.Setenv(env, "")
	}
	dir := t.TempDir()
	var out, errOut syncBuffer
	cmd := newRootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	t.Cleanup(func() { registryDir = "" }) // the flag's variable is package state
	cmd.SetArgs([]string{"dev", "--registry", devTestRegistry, "--once", "--no-schedules", "--data-dir", dir, "--frontend-addr", "127.0.0.1:0", "--ui-addr", "off",
		"--status-addr", "off", "--metrics-addr", "", "--log-level", "info", "--date", "2026-11-20",
		"--dataset", "fred-dgs10", "--dataset", "upbit-krw-btc"})
	// A bound, not a timing assertion: embedded servers under -race on
	// a busy 2-core machine take minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("sluice dev: %v\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	stdout, stderr := out.String(), errOut.String()
	logPath := filepath.Join(dir, "logs", "dev.log")
	for _, want := range []string{"Temporal   127.0.0.1:", "Log        " + logPath, "ELAPSED", "BOUND", "VS BOUND"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the console lacks %q:\n%s", want, stdout)
		}
	}
	// Both datasets' ingests are the watch's observations: up.
	if !regexp.MustCompile(`(?m)^watch: \d+ datasets, ([2-9]|\d\d+) up`).MatchString(stdout) {
		t.Errorf("no one-line watch summary with the two ingested datasets up:\n%s", stdout)
	}
	for _, noise := range []string{"level=INFO", "level=DEBUG", "watch change"} {
		if strings.Contains(stdout, noise) || strings.Contains(stderr, noise) {
			t.Errorf("%q on the console:\nstdout:\n%s\nstderr:\n%s", noise, stdout, stderr)
		}
	}
	file, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(file), `msg="watch change"`) || !strings.Contains(string(file), "level=INFO") {
		t.Errorf("the log file lacks the watch's changes:\n%.3000s", file)
	}
}

// TestConsoleKeepsRetriedAttemptsOffIt: the Temporal SDK's "Activity
// error." line for a failed attempt (a transient answer the retry policy
// tries again) goes to the log file, not to the console, unless at
// --log-level debug; a real warning still shows. The make run console
// showed these as ERROR lines. So does its line for a heartbeat sent as
// the attempt ended (a cancelled context), seen once as a WARN on a
// make run console; any other heartbeat failure stays a warning.
func TestConsoleKeepsRetriedAttemptsOffIt(t *testing.T) {
	for _, c := range []struct {
		level   string
		console bool
	}{{"info", false}, {"debug", true}} {
		path := filepath.Join(t.TempDir(), "logs", "dev.log")
		var console bytes.Buffer
		log, closeLog, err := consoleLogger(c.level, path, &console)
		if err != nil {
			t.Fatal(err)
		}
		tl := temporalLogger(log)
		tl.Error("Activity error.", "ActivityType", "Ingest", "Attempt", 1, "Error", "fred data call: transient: HTTP 503")
		tl.Warn("Failed to poll for task.", "Error", "connection refused")
		tl.Warn("RecordActivityHeartbeat with error", "Error", context.Canceled)
		tl.Warn("RecordActivityHeartbeat with error", "Error", errors.New("deadline exceeded reaching the frontend"))
		log.Warn("a daily run took more calls than the budget gate counts for it")
		closeLog()
		file, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(file), `level=INFO msg="Activity error." ActivityType=Ingest`) {
			t.Errorf("%s: the log file lacks the attempt's error at info:\n%s", c.level, file)
		}
		if got := strings.Contains(console.String(), "Activity error."); got != c.console {
			t.Errorf("%s: the attempt's error on the console %v, want %v:\n%s", c.level, got, c.console, console.String())
		}
		// A heartbeat the SDK sent as its attempt ended (a cancelled
		// context) is info, seen once on a make run console; a heartbeat
		// that failed otherwise stays a warning.
		if got := strings.Contains(console.String(), "context canceled"); got != c.console {
			t.Errorf("%s: the cancelled heartbeat on the console %v, want %v:\n%s", c.level, got, c.console, console.String())
		}
		if !strings.Contains(console.String(), "deadline exceeded reaching the frontend") {
			t.Errorf("%s: the failed heartbeat is not on the console:\n%s", c.level, console.String())
		}
		if !strings.Contains(string(file), `level=INFO msg="RecordActivityHeartbeat with error" Error="context canceled"`) {
			t.Errorf("%s: the log file lacks the cancelled heartbeat at info:\n%s", c.level, file)
		}
		if strings.Contains(console.String(), "level=ERROR") {
			t.Errorf("%s: an ERROR line on the console:\n%s", c.level, console.String())
		}
		if !strings.Contains(console.String(), "budget gate") || !strings.Contains(console.String(), "Failed to poll") {
			t.Errorf("%s: the warnings are not on the console:\n%s", c.level, console.String())
		}
	}
}
