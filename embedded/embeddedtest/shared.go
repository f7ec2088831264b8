// Package embeddedtest lets the tests of one package share one embedded
// Temporal server, each test in a namespace of its own: an embedded start
// under -race costs seconds of CPU, a namespace a few milliseconds.
package embeddedtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluicehq/sluice/embedded"
)

// Shared is a package's shared server, started on first use. Its zero
// value is ready; the package's TestMain calls Stop after m.Run.
type Shared struct {
	once sync.Once
	srv  *embedded.Server
	dir  string
	err  error
	seq  atomic.Int64
}

// nonName is what a namespace made of a test's name leaves out.
var nonName = regexp.MustCompile(`[^A-Za-z0-9]+`)

// Namespace starts the server on first use and registers a new namespace
// named after the test, with the search attributes the embedded server
// gives its own namespace (Sluice's workflows set them). It returns the
// frontend's address and the namespace.
func (s *Shared) Namespace(t testing.TB) (hostPort, namespace string) {
	t.Helper()
	s.once.Do(func() {
		if s.dir, s.err = os.MkdirTemp("", "sluice-shared-temporal-"); s.err != nil {
			return
		}
		// A bound, not a timing assertion.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s.srv, s.err = embedded.Start(ctx, embedded.Options{DataDir: s.dir, FrontendAddr: "127.0.0.1:0",
			UIAddr: embedded.UIOff, Logger: slog.New(slog.DiscardHandler)})
	})
	if s.err != nil {
		t.Fatalf("starting the shared embedded server: %v", s.err)
	}
	hostPort = s.srv.FrontendHostPort()
	name := strings.Trim(strings.ToLower(nonName.ReplaceAllString(t.Name(), "-")), "-")
	namespace = fmt.Sprintf("t%d-%s", s.seq.Add(1), name)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := log.NewStructuredLogger(slog.New(slog.DiscardHandler))
	nc, err := client.NewNamespaceClient(client.Options{HostPort: hostPort, Logger: quiet})
	if err != nil {
		t.Fatalf("connecting to the shared server: %v", err)
	}
	defer nc.Close()
	if err := nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)}); err != nil {
		t.Fatalf("registering namespace %s: %v", namespace, err)
	}
	for {
		_, err := nc.Describe(ctx, namespace)
		if err == nil {
			break
		}
		var nf *serviceerror.NamespaceNotFound
		if !errors.As(err, &nf) || ctx.Err() != nil {
			t.Fatalf("waiting for namespace %s: %v", namespace, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tc, err := client.Dial(client.Options{HostPort: hostPort, Namespace: namespace, Logger: quiet})
	if err != nil {
		t.Fatalf("connecting to the shared server: %v", err)
	}
	defer tc.Close()
	if _, err := tc.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace,
		SearchAttributes: embedded.SearchAttributes}); err != nil {
		t.Fatalf("registering search attributes on %s: %v", namespace, err)
	}
	return hostPort, namespace
}

// Stop stops the server, if it was started, and removes its directory.
func (s *Shared) Stop() {
	if s.srv != nil {
		_ = s.srv.Stop()
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}
