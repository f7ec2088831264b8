package main

import (
	"context"
	"strings"
	"testing"
)

// TestRefusesInsecureRemote: sluice dev and sluice server refuse an
// embedded Temporal frontend or Web UI off loopback without protection,
// naming the flag, its value and --allow-insecure-remote, before binding
// anything; with --allow-insecure-remote they go on (to a later error
// here, so that nothing binds off loopback in the test).
func TestRefusesInsecureRemote(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		want []string // "" error: forced, so the run got past the check
	}{
		{[]string{"server", "--frontend-addr", "0.0.0.0:7233"}, []string{"--frontend-addr 0.0.0.0:7233", "--allow-insecure-remote", "mutual TLS"}},
		{[]string{"server", "--frontend-addr", "127.0.0.1:0", "--ui-addr", "0.0.0.0:8233"}, []string{"--ui-addr 0.0.0.0:8233", "--allow-insecure-remote"}},
		{[]string{"dev", "--frontend-addr", "192.0.2.1:7233"}, []string{"--frontend-addr 192.0.2.1:7233", "--allow-insecure-remote"}},
		{[]string{"dev", "--ui-addr", "[::]:8233"}, []string{"--ui-addr [::]:8233", "--allow-insecure-remote"}},
		// Forced: the server goes on to resolve its options (and fails on
		// the namespace, before binding); dev goes on to check --date.
		{[]string{"server", "--frontend-addr", "0.0.0.0:0", "--ui-addr", "0.0.0.0:0", "--allow-insecure-remote", "--namespace", "a b"}, []string{"Namespace"}},
		{[]string{"dev", "--frontend-addr", "0.0.0.0:0", "--ui-addr", "0.0.0.0:0", "--allow-insecure-remote", "--date", "yesterday"}, []string{"--date"}},
	} {
		args := append(tc.args, "--data-dir", t.TempDir(), "--metrics-addr", "")
		if tc.args[0] == "server" {
			args = args[:len(args)-2]
		}
		_, err := runSluice(ctx, args...)
		if err == nil {
			t.Errorf("%v: no error", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %v, want it to name %q", tc.args, err, w)
			}
		}
		if strings.Contains(strings.Join(tc.args, " "), "--allow-insecure-remote") && strings.Contains(err.Error(), "refusing") {
			t.Errorf("%v: refused despite --allow-insecure-remote: %v", tc.args, err)
		}
	}
}
