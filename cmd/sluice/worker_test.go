package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestWorkerRefusesBadRateScale: a rate scale that is not a positive
// finite number stops `sluice worker` and `sluice dev` before they start
// anything, naming the flag and its environment variable. (A scale other
// than 1 against anything but a simulator at that scale is refused when the
// worker starts: ratelimit.TestCheckScale.)
func TestWorkerRefusesBadRateScale(t *testing.T) {
	for _, newCmd := range []func() *cobra.Command{newWorkerCmd, newDevCmd} {
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"--rate-scale", "+Inf"}, []string{"--rate-scale +Inf", "SLUICE_RATE_SCALE", "finite"}},
			{[]string{"--rate-scale", "NaN"}, []string{"--rate-scale NaN", "finite"}},
			{[]string{"--rate-scale", "0"}, []string{"--rate-scale 0", "positive"}},
			{[]string{"--rate-scale", "-2"}, []string{"--rate-scale -2", "positive"}},
			{[]string{"--max-quota-wait", "-1h"}, []string{"--max-quota-wait -1h0m0s", "negative"}},
			{[]string{"--promote", "sometimes"}, []string{"--promote", "SLUICE_PROMOTE", "if-none, never or always"}},
			{[]string{"--build-id", "v1.2"}, []string{"--build-id \"v1.2\"", "SLUICE_BUILD_ID"}},
			{[]string{"--lineage-url", "marquez:5000/api/v1/lineage"}, []string{"--lineage-url", "SLUICE_LINEAGE_URL", "http or https"}},
			{[]string{"--lineage-api-key-file", "/nonexistent/lineage-key"}, []string{"--lineage-api-key-file", "/nonexistent/lineage-key"}},
			{[]string{"--lineage-namespace", " "}, []string{"--lineage-namespace", "SLUICE_LINEAGE_NAMESPACE"}},
		} {
			cmd := newCmd()
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			args := append(tc.args, "--data-dir", t.TempDir(), "--metrics-addr", "")
			if cmd.Name() == "dev" {
				// Should validation ever fail to stop it: free ports, no UI, no batch.
				args = append(args, "--frontend-addr", "127.0.0.1:0", "--ui-addr", "off", "--sim-addr", "127.0.0.1:0", "--no-ingest", "--once")
			}
			cmd.SetArgs(args)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := cmd.ExecuteContext(ctx)
			cancel()
			if err == nil {
				t.Errorf("%s %v: accepted", cmd.Name(), tc.args)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s %v: error %q does not contain %q", cmd.Name(), tc.args, err, w)
				}
			}
		}
	}
}

// TestWorkerRefusesBadRateScaleFromEnvironment: compose passes the scale as
// SLUICE_RATE_SCALE; a non-finite one is refused the same way.
func TestWorkerRefusesBadRateScaleFromEnvironment(t *testing.T) {
	for _, v := range []string{"NaN", "Inf", "-1", "0"} {
		t.Setenv("SLUICE_RATE_SCALE", v)
		cmd := newWorkerCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs([]string{"--data-dir", t.TempDir(), "--metrics-addr", ""})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cmd.ExecuteContext(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "SLUICE_RATE_SCALE") {
			t.Errorf("SLUICE_RATE_SCALE=%s: %v", v, err)
		}
	}
}

// TestMetricsAddrDefaultsToLoopback: /metrics is not served on every
// interface unless asked (compose asks with SLUICE_METRICS_ADDR).
func TestMetricsAddrDefaultsToLoopback(t *testing.T) {
	for name, cmd := range map[string]*cobra.Command{"worker": newWorkerCmd(), "dev": newDevCmd()} {
		f := cmd.Flags().Lookup("metrics-addr")
		if f == nil {
			t.Fatalf("%s has no --metrics-addr", name)
		}
		host, _, err := net.SplitHostPort(f.DefValue)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			t.Errorf("sluice %s --metrics-addr defaults to %q, not a loopback address", name, f.DefValue)
		}
	}
}

// TestLineageFlags: the lineage flags resolve to the emitter's options: a
// relative file under --data-dir, the API key from SLUICE_LINEAGE_API_KEY
// or its _FILE, never echoed in an error, a key without a URL refused, and
// the lake named by its bucket or its absolute path.
func TestLineageFlags(t *testing.T) {
	const secret = "lineage-secret-0123456789"
	dir := t.TempDir()
	t.Setenv(envLineageAPIKey, secret)
	t.Setenv("SLUICE_LINEAGE_URL", "")
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	var rf runtimeFlags
	rf.bind(fs)
	if err := fs.Parse([]string{"--data-dir", dir, "--lineage-url", "https://marquez.example:5000/api/v1/lineage?api_key=" + secret,
		"--lineage-file", "lineage/events.jsonl"}); err != nil {
		t.Fatal(err)
	}
	if err := rf.validate(); err != nil {
		t.Fatal(err)
	}
	d := rf.lineageDest
	if d.APIKey != secret || d.File != filepath.Join(dir, "lineage", "events.jsonl") || !strings.HasPrefix(d.URL, "https://marquez.example:5000/") {
		t.Errorf("lineage options %+v", d)
	}
	if got := rf.lineageInUse(); strings.Contains(got, secret) || !strings.Contains(got, "https://marquez.example:5000/api/v1/lineage") {
		t.Errorf("start-up log names %q", got)
	}
	if l := rf.lineageLake(); l.Namespace != "file" || l.Root != filepath.Join(dir, "lake") {
		t.Errorf("local lake %+v", l)
	}
	rf.lake.cfg.S3Bucket = "sluice-lake"
	if l := rf.lineageLake(); l.Namespace != "s3://sluice-lake" || l.Root != "" {
		t.Errorf("S3 lake %+v", l)
	}

	// A bad URL is named redacted; a key with nowhere to go is refused.
	rf.lineageURL = "ftp://marquez.example/?api_key=" + secret
	if err := rf.validate(); err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "ftp://marquez.example") {
		t.Errorf("bad url: %v", err)
	}
	rf.lineageURL = ""
	if err := rf.validate(); err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), envLineageAPIKey) {
		t.Errorf("key without a url: %v", err)
	}

	// The key from a file, trimmed; both set is refused.
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rf.lineageURL, rf.lineageKeyFile = "http://127.0.0.1:5000/api/v1/lineage", keyFile
	if err := rf.validate(); err == nil {
		t.Error("a key in both the file and the environment was accepted")
	}
	t.Setenv(envLineageAPIKey, "")
	if err := rf.validate(); err != nil || rf.lineageDest.APIKey != secret {
		t.Errorf("key from its file: %q, %v", rf.lineageDest.APIKey, err)
	}
}
