//go:build linux

package e2e

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
)

// The shared environment, set up once by setup: the sluice binary, one
// embedded Temporal server and the default registry.
//
// The Temporal server runs as a `sluice server` process built without the
// race detector, not inside the race-built test process: there, its
// update round trips took 55 to 170 ms, longer than the limiter's default
// 50 ms send tolerance, so every permit answer arrived too late to use and
// no call was ever sent. A production server is
// not race-built either.
var (
	setupOnce    sync.Once
	setupErr     error
	buildOnce    sync.Once
	buildErr     error
	workDir      string // removed by TestMain
	sluiceBin    string
	temporalAddr string // host:port of the Temporal frontend
	serverProc   *exec.Cmd
	serverLog    string
	reg          *registry.Registry
)

// longTests is how many tests run side by side unless -parallel says
// otherwise: the worker-kill, provider-down and half-rate tests spend most
// of their time waiting on Temporal's timers (a heartbeat timeout, retry
// backoff, a backed-off limiter), not on the CPU, so even on two cores
// they run together.
const longTests = 3

func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", strconv.Itoa(longTests))
	}
	code := m.Run()
	if serverProc != nil {
		_ = serverProc.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = serverProc.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = serverProc.Process.Kill()
			<-done
		}
	}
	if workDir != "" {
		_ = os.RemoveAll(workDir)
	}
	os.Exit(code)
}

// env sets up the shared environment on first use, so that a run
// selecting no test of this package pays nothing.
func env(t testing.TB) {
	t.Helper()
	setupOnce.Do(func() { setupErr = setup() })
	if setupErr != nil {
		t.Fatalf("setting up the e2e environment: %v", setupErr)
	}
}

// binEnv names a sluice binary built beforehand for the tests to use
// instead of building their own: make test builds it (e2e-build) beside
// vet, so that its compile and link, minutes on a loaded machine, are not
// in the package's time. It must be built from this tree without the race
// detector.
const binEnv = "SLUICE_E2E_BINARY"

// buildBinary makes the work directory and builds sluice into it (or
// takes $SLUICE_E2E_BINARY), once; tests that need only the binary call
// it instead of env.
func buildBinary() error {
	buildOnce.Do(func() {
		if workDir, buildErr = os.MkdirTemp("", "sluice-e2e-"); buildErr != nil {
			return
		}
		if p := os.Getenv(binEnv); p != "" {
			fi, err := os.Stat(p)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
				buildErr = fmt.Errorf("%s=%s: not an executable file (%v)", binEnv, p, err)
				return
			}
			sluiceBin = p
			return
		}
		sluiceBin, buildErr = buildSluice(workDir)
	})
	return buildErr
}

func setup() error {
	var err error
	began := time.Now()
	if err := buildBinary(); err != nil {
		return err
	}
	built := time.Since(began)
	if reg, err = registry.Default(registry.Options{}); err != nil {
		return fmt.Errorf("loading the default registry: %w", err)
	}
	began = time.Now()
	if err := startServer(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "e2e: sluice built in %s; Temporal up in %s at %s\n",
		built.Round(time.Millisecond), time.Since(began).Round(time.Millisecond), temporalAddr)
	return nil
}

// buildSluice builds cmd/sluice into dir, without the race detector even
// when the tests run with it: the workers are the binary users run.
func buildSluice(dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("finding the go command: %w", err)
	}
	out, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("running go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside the sluice module")
	}
	bin := filepath.Join(dir, "sluice")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/sluicehq/sluice/cmd/sluice")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building sluice: %w\n%s", err, out)
	}
	return bin, nil
}

// startServer runs `sluice server` on a free port and waits for the
// frontend address it prints once the namespace answers.
func startServer() error {
	serverLog = filepath.Join(workDir, "server.log")
	logFile, err := os.Create(serverLog)
	if err != nil {
		return err
	}
	cmd := exec.Command(sluiceBin, "server", "--data-dir", filepath.Join(workDir, "server"),
		"--frontend-addr", "127.0.0.1:0", "--ui-addr", "off")
	cmd.Env = cleanEnv()
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting sluice server: %w", err)
	}
	serverProc = cmd
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			// "Temporal   127.0.0.1:41153 (namespace default)"
			if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "Temporal" {
				addr <- f[1]
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			b, _ := os.ReadFile(serverLog)
			return fmt.Errorf("sluice server exited before it was up:\n%s", b)
		}
		temporalAddr = a
		return nil
	case <-time.After(2 * time.Minute):
		b, _ := os.ReadFile(serverLog)
		return fmt.Errorf("sluice server did not come up within 2 minutes:\n%s", b)
	}
}
