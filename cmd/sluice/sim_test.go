package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSimCommandServesUntilCancelled(t *testing.T) {
	prev := registryDir
	registryDir = "../../simulator/simtest/testdata/full"
	t.Cleanup(func() { registryDir = prev })

	cmd := newSimCmd()
	var out, errOut syncBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"--addr", "127.0.0.1:0", "--rate-scale", "100", "--seed", "3", "--fault", "provider=upbit,down"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	urlRe := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	keyRe := regexp.MustCompile(`export FRED_API_KEY='([a-z0-9]{32})'`)
	var base, key string
	for i := 0; i < 1000 && key == ""; i++ {
		select {
		case err := <-done:
			t.Fatalf("sim exited early: %v\n%s%s", err, out.String(), errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
		if m := urlRe.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
		if m := keyRe.FindStringSubmatch(out.String()); m != nil {
			key = m[1]
		}
	}
	if base == "" || key == "" {
		t.Fatalf("no URL or FRED key in the banner:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "rate scale 100") || !strings.Contains(out.String(), "export KIS_APP_KEY='PS") {
		t.Errorf("banner:\n%s", out.String())
	}

	resp, err := http.Get(base + "/fred/series/observations?series_id=DGS10&file_type=json&observation_start=2025-01-02&observation_end=2025-01-03&api_key=" + key)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"date":"2025-01-03"`) {
		t.Fatalf("FRED through the command: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Get(base + "/v1/candles/days?market=KRW-BTC")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("--fault provider=upbit,down: status %d", resp.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("sim returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sim did not stop after cancel")
	}
	if _, err := http.Get(base + "/_sim/health"); err == nil {
		t.Error("the simulator still answers after the command returned")
	}
}

func TestSimCommandRejectsBadFault(t *testing.T) {
	prev := registryDir
	registryDir = "../../simulator/simtest/testdata/full"
	t.Cleanup(func() { registryDir = prev })
	cmd := newSimCmd()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"--addr", "127.0.0.1:0", "--fault", "provider=kis,error-rate=3"})
	err := cmd.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "error_rate") {
		t.Fatalf("bad fault: %v", err)
	}
}

func TestSimCommandRejectsBadTargetsAndScales(t *testing.T) {
	prev := registryDir
	registryDir = "../../simulator/simtest/testdata/full"
	t.Cleanup(func() { registryDir = prev })
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--fault", "provider=nope,down"}, []string{`provider "nope"`, "known providers: kis, ecos, fred, upbit, datago"}},
		{[]string{"--fault", "provider=fred,dataset=kis-nope,down"}, []string{`dataset "kis-nope"`}},
		{[]string{"--fault", "provider=kis,dataset=fred-dgs10,down"}, []string{`belongs to "fred"`}},
		{[]string{"--rate-scale", "+Inf"}, []string{"--rate-scale +Inf", "finite"}},
		{[]string{"--rate-scale", "NaN"}, []string{"--rate-scale NaN", "finite"}},
		{[]string{"--rate-scale", "0"}, []string{"--rate-scale 0", "positive"}},
		{[]string{"--rate-scale", "-2"}, []string{"--rate-scale -2", "positive"}},
	} {
		cmd := newSimCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append([]string{"--addr", "127.0.0.1:0"}, tc.args...))
		// A simulator that wrongly starts serves until the context ends.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cmd.ExecuteContext(ctx)
		cancel()
		if err == nil {
			t.Errorf("%v: accepted", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not contain %q", tc.args, err, w)
			}
		}
	}
}
