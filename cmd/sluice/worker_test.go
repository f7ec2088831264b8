package main

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
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
