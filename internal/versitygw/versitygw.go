// Package versitygw runs a real S3 server for tests: versitygw with its
// posix backend over a temporary directory, listening on a free loopback
// port (StartOn: a port of another address of the machine's, such as a
// test network's bridge), with one bucket created and the process killed
// when the test ends.
//
// The binary is found at $SLUICE_VERSITYGW, else <module root>/bin/versitygw
// (installed by `make tools`), else on PATH. A missing binary fails the test:
// S3 behaviour is never skipped or mocked.
package versitygw

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Test credentials and names. They guard nothing: the server listens on
// loopback and lives as long as one test.
const (
	AccessKey = "sluicetestaccess"
	SecretKey = "sluicetestsecretkey0123456789"
	Region    = "us-east-1"
	Bucket    = "sluice-test"
	// EnvBinary names the environment variable that points at the binary.
	EnvBinary = "SLUICE_VERSITYGW"
)

// startTimeout bounds how long a server may take to answer.
const startTimeout = 60 * time.Second

// Server is a running versitygw.
type Server struct {
	// Endpoint is the server's base URL, http://127.0.0.1:<port>.
	Endpoint string
	// Bucket is the bucket created for the test.
	Bucket string
	// AccessKey and SecretKey are the root user's credentials.
	AccessKey, SecretKey string
	// Region is the server's region.
	Region string
	// Dir is the posix backend's root directory; the bucket is
	// Dir/<Bucket>.
	Dir string

	t       testing.TB
	bin     string
	addr    string
	sidecar string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	out  *lockedWriter
}

// Binary returns the versitygw binary to run, or an error telling the user
// to run `make tools`.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("versitygw not found at $%s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	if root, err := moduleRoot(); err == nil {
		p := filepath.Join(root, "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	return "", errors.New("versitygw not found: run `make tools`")
}

// moduleRoot finds the directory of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Start runs a versitygw for the test and creates its bucket. The server
// is killed when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, "127.0.0.1", false)
}

// StartOn is Start with the server listening on host (an IP address of
// this machine, such as a test network's bridge) instead of loopback.
func StartOn(t testing.TB, host string) *Server {
	t.Helper()
	return start(t, host, false)
}

// start runs the server; forceSidecar keeps metadata in a sidecar
// directory even where user xattrs work (to test that path).
func start(t testing.TB, host string, forceSidecar bool) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &Server{
		Bucket:    Bucket,
		AccessKey: AccessKey,
		SecretKey: SecretKey,
		Region:    Region,
		Dir:       filepath.Join(dir, "root"),
		t:         t,
		bin:       bin,
	}
	if err := os.Mkdir(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if forceSidecar || !xattrSupported(dir) {
		// posix keeps metadata in user xattrs; without them, in a sidecar
		// directory.
		s.sidecar = filepath.Join(dir, "meta")
		if err := os.Mkdir(s.sidecar, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(s.Kill)
	// A free port can be taken between probing and binding: try again.
	for attempt := 1; ; attempt++ {
		s.addr = freeAddr(t, host)
		s.Endpoint = "http://" + s.addr
		err := s.run()
		if err == nil {
			break
		}
		if attempt == 3 {
			t.Fatalf("starting versitygw: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		t.Fatalf("creating bucket %s: %v", s.Bucket, err)
	}
	return s
}

func freeAddr(t testing.TB, host string) string {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// run starts the process and waits until it answers its health check.
func (s *Server) run() error {
	args := []string{"--port", s.addr, "--health", "/health", "--quiet", "posix"}
	if s.sidecar != "" {
		args = append(args, "--sidecar", s.sidecar)
	}
	args = append(args, s.Dir)
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(os.Environ(),
		"ROOT_ACCESS_KEY="+s.AccessKey,
		"ROOT_SECRET_KEY="+s.SecretKey,
		"VGW_REGION="+s.Region,
	)
	out := &lockedWriter{}
	cmd.Stdout, cmd.Stderr = out, out
	orphanGuard(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done, s.out = cmd, done, out
	s.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-done:
			return fmt.Errorf("versitygw exited: %s", s.output())
		default:
		}
		resp, err := client.Get(s.Endpoint + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("versitygw did not answer on %s within %s: %s", s.addr, startTimeout, s.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) output() string {
	s.mu.Lock()
	out := s.out
	s.mu.Unlock()
	if out == nil {
		return ""
	}
	return out.String()
}

// Kill stops the server at once (SIGKILL), as a crash would, and waits for
// the process to exit. It is safe to call more than once.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart kills the server if it runs and starts it again on the same
// port and directory.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	if err := s.run(); err != nil {
		s.t.Fatalf("restarting versitygw: %v", err)
	}
}

// Credentials returns a static provider for the root user.
func (s *Server) Credentials() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, "")
}

// Client returns an S3 client for the server (path-style addressing).
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  s.Credentials(),
	})
}

// lockedWriter serialises the process's stdout and stderr into one buffer.
type lockedWriter struct {
	mu sync.Mutex
	w  bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w.Len() > 64<<10 {
		return len(p), nil // keep the start; enough to diagnose
	}
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}
