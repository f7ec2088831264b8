package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluicehq/sluice/status"
	"github.com/sluicehq/sluice/watch/store"
)

const envStatusTrustedProxy = "SLUICE_STATUS_TRUSTED_PROXY"

// TestStatusTrustedProxyFlag: --status-trusted-proxy takes CIDRs and
// addresses, its variable sets the default, the flag beats the variable,
// and a bad value is refused naming the flag or the variable.
func TestStatusTrustedProxyFlag(t *testing.T) {
	parse := func(env string, args ...string) (string, error) {
		t.Setenv(envStatusTrustedProxy, env)
		delete(envProblems, envStatusTrustedProxy)
		defer delete(envProblems, envStatusTrustedProxy)
		var f statusFlags
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.bind(fs, "addr", "")
		err := fs.Parse(args)
		if err == nil {
			err = checkEnv(fs)
		}
		return fmt.Sprint(f.proxies), err
	}
	for _, c := range []struct {
		env  string
		args []string
		want string
	}{
		{"", nil, "[]"},
		{"", []string{"--status-trusted-proxy", "10.0.0.0/8,192.0.2.1"}, "[10.0.0.0/8 192.0.2.1/32]"},
		{"172.16.0.0/12", nil, "[172.16.0.0/12]"},
		{"172.16.0.0/12", []string{"--status-trusted-proxy", "fd00::/8"}, "[fd00::/8]"},
	} {
		got, err := parse(c.env, c.args...)
		if err != nil || got != c.want {
			t.Errorf("env %q args %q: %s, %v; want %s", c.env, c.args, got, err, c.want)
		}
	}
	if _, err := parse("", "--status-trusted-proxy", "proxy.example"); err == nil || !strings.Contains(err.Error(), "status-trusted-proxy") {
		t.Errorf("a host name on the flag: %v", err)
	}
	if _, err := parse("10.0.0.0/33"); err == nil || !strings.Contains(err.Error(), envStatusTrustedProxy) {
		t.Errorf("a bad variable: %v", err)
	}
}

// TestStatusTrustedProxySecureCookies: sluice status behind a proxy it is
// told to trust marks cookies Secure when the proxy says
// X-Forwarded-Proto: https; without the flag the header is ignored.
func TestStatusTrustedProxySecureCookies(t *testing.T) {
	for _, env := range []string{envS3Bucket, envS3Endpoint, envDataDir, status.EnvOperatorTokenFile, store.EnvDSN, envStatusTrustedProxy} {
		t.Setenv(env, "")
	}
	t.Setenv(status.EnvOperatorToken, "proxy-test-operator-token-0123")
	dir := t.TempDir()
	st, err := store.Open(context.Background(), store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	secure := func(args ...string) bool {
		t.Helper()
		out := &syncBuffer{}
		cmd := newRootCmd()
		cmd.SetOut(out)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append([]string{"status", "--no-temporal", "--data-dir", dir, "--addr", "127.0.0.1:0"}, args...))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		done := make(chan error, 1)
		go func() { done <- cmd.ExecuteContext(ctx) }()
		defer func() { cancel(); <-done }()
		re := regexp.MustCompile(`Status +(http://127\.0\.0\.1:\d+)/`)
		var m []string
		for m == nil {
			select {
			case err := <-done:
				t.Fatalf("sluice status ended: %v\n%s", err, out.String())
			case <-time.After(50 * time.Millisecond):
			}
			m = re.FindStringSubmatch(out.String())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m[1]+"/ops/login", nil)
		req.Header.Set("X-Forwarded-Proto", "https")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(resp.Cookies()) == 0 {
			t.Fatalf("GET /ops/login: %d, cookies %v", resp.StatusCode, resp.Cookies())
		}
		for _, c := range resp.Cookies() {
			if !c.Secure {
				return false
			}
		}
		return true
	}
	if !secure("--status-trusted-proxy", "127.0.0.0/8") {
		t.Error("behind a trusted proxy saying https the cookies are not Secure")
	}
	if secure() {
		t.Error("without --status-trusted-proxy X-Forwarded-Proto is believed")
	}
	if secure("--status-trusted-proxy", "192.0.2.0/24") {
		t.Error("X-Forwarded-Proto from a peer outside the trusted proxies is believed")
	}
}

// TestStatusPublicURLFlag: --status-public-url is bound with its
// variable, and a URL that is not http(s)://host[/prefix] is refused
// naming the flag and the value before anything is opened.
func TestStatusPublicURLFlag(t *testing.T) {
	t.Setenv("SLUICE_STATUS_PUBLIC_URL", "https://status.example.com")
	delete(envProblems, "SLUICE_STATUS_PUBLIC_URL")
	var f statusFlags
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.bind(fs, "addr", "")
	if err := fs.Parse(nil); err != nil || f.public != "https://status.example.com" {
		t.Fatalf("from the variable: %q, %v", f.public, err)
	}
	for _, bad := range []string{"javascript:alert(1)", "status.example.com", "https://h/?x=1"} {
		_, err := startStatus(context.Background(), statusFlags{addr: "127.0.0.1:0", timezone: "UTC", public: bad}, statusDeps{})
		if err == nil || !strings.Contains(err.Error(), "--status-public-url") || !strings.Contains(err.Error(), bad) {
			t.Errorf("--status-public-url %q: %v", bad, err)
		}
	}
}
