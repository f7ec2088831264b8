package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/watch"
)

const (
	envHelperDSN = "SLUICE_STORE_HELPER_DSN"
	envHelperID  = "SLUICE_STORE_HELPER_ID"
	helperProcs  = 3
	helperEach   = 4 // goroutines per process
	helperProbes = 15
)

// TestConcurrentProcesses: three worker processes open the same fresh
// database at the same moment — racing to apply the migrations — and
// write probes of shared datasets from several goroutines each. Every
// probe is recorded and every state stepped once per probe.
func TestConcurrentProcesses(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			type proc struct {
				cmd   *exec.Cmd
				stdin io.WriteCloser
				out   bytes.Buffer
			}
			var procs []*proc
			for i := 0; i < helperProcs; i++ {
				p := &proc{cmd: exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1", "-test.v")}
				p.cmd.Env = append(os.Environ(), envHelperDSN+"="+dsn, envHelperID+"="+strconv.Itoa(i))
				p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
				var err error
				if p.stdin, err = p.cmd.StdinPipe(); err != nil {
					t.Fatal(err)
				}
				if err := p.cmd.Start(); err != nil {
					t.Fatal(err)
				}
				procs = append(procs, p)
			}
			// Every child waits for its stdin to close: closing them all
			// together starts them at once, without a clock.
			for _, p := range procs {
				p.stdin.Close()
			}
			for i, p := range procs {
				if err := p.cmd.Wait(); err != nil {
					t.Fatalf("writer %d: %v\n%s", i, err, p.out.String())
				}
				if !bytes.Contains(p.out.Bytes(), []byte("--- PASS: TestHelperWriter")) {
					t.Fatalf("writer %d did not run:\n%s", i, p.out.String())
				}
			}
			s := open(t, dsn, Retention{})
			ctx := context.Background()
			probes, err := s.Probes(ctx, ProbeFilter{Limit: MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			want := helperProcs * helperEach * helperProbes
			if len(probes) != want {
				t.Errorf("%d probes recorded, want %d", len(probes), want)
			}
			states, err := s.States(ctx, t0)
			if err != nil {
				t.Fatal(err)
			}
			total := int64(0)
			for _, st := range states {
				total += st.Probes
			}
			if total != int64(want) {
				t.Errorf("states stepped %d probes, want %d", total, want)
			}
		})
	}
}

// TestHelperWriter is one worker process of TestConcurrentProcesses; run
// alone it does nothing.
func TestHelperWriter(t *testing.T) {
	dsn := os.Getenv(envHelperDSN)
	if dsn == "" {
		t.Skip("the worker process of TestConcurrentProcesses")
	}
	id, _ := strconv.Atoi(os.Getenv(envHelperID))
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := Open(ctx, Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	errs := make(chan error, helperEach)
	for g := 0; g < helperEach; g++ {
		go func(g int) {
			for i := 0; i < helperProbes; i++ {
				n := (id*helperEach+g)*helperProbes + i
				o := watch.OK
				if i%4 == 1 {
					o = watch.Network
				}
				p := watch.Probe{At: t0.Add(time.Duration(n) * time.Second), Dataset: fmt.Sprintf("d%d", n%3), Outcome: o}
				if _, err := s.Observe(ctx, p, hourly); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(g)
	}
	for g := 0; g < helperEach; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
