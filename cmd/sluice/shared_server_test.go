package main

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
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluicehq/sluice/embedded"
)

// sharedServer is the one embedded Temporal server the tests that only
// need a server share, each in a namespace of its own (sharedNamespace):
// an embedded start under -race costs seconds of CPU, a namespace a few
// milliseconds. TestMain stops it.
var sharedServer struct {
	once sync.Once
	srv  *embedded.Server
	dir  string
	err  error
	seq  atomic.Int64
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedServer.srv != nil {
		_ = sharedServer.srv.Stop()
	}
	if sharedServer.dir != "" {
		_ = os.RemoveAll(sharedServer.dir)
	}
	os.Exit(code)
}

// sharedNamespace starts the shared server on first use and registers a
// new namespace named after the test on it, with the search attributes
// the embedded server gives its own namespace. It returns the frontend's
// address and the namespace.
func sharedNamespace(t *testing.T) (hostPort, namespace string) {
	t.Helper()
	sharedServer.once.Do(func() {
		if sharedServer.dir, sharedServer.err = os.MkdirTemp("", "sluice-shared-temporal-"); sharedServer.err != nil {
			return
		}
		// A bound, not a timing assertion.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		sharedServer.srv, sharedServer.err = embedded.Start(ctx, embedded.Options{DataDir: sharedServer.dir, FrontendAddr: "127.0.0.1:0",
			UIAddr: embedded.UIOff, Logger: slog.New(slog.DiscardHandler)})
	})
	if sharedServer.err != nil {
		t.Fatalf("starting the shared embedded server: %v", sharedServer.err)
	}
	hostPort = sharedServer.srv.FrontendHostPort()
	name := strings.Trim(strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-")), "-")
	namespace = fmt.Sprintf("t%d-%s", sharedServer.seq.Add(1), name)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := client.NewNamespaceClient(client.Options{HostPort: hostPort, Logger: temporalLogger(discardLogger())})
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
	tc, err := client.Dial(client.Options{HostPort: hostPort, Namespace: namespace, Logger: temporalLogger(discardLogger())})
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
