package main

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/embedded/embeddedtest"
)

// sharedServer is the one embedded Temporal server the tests that only
// need a server share, each in a namespace of its own (sharedNamespace).
// TestMain stops it.
var sharedServer embeddedtest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	sharedServer.Stop()
	os.Exit(code)
}

// sharedNamespace registers a new namespace named after the test on the
// shared server, starting it on first use, and returns the frontend's
// address and the namespace.
func sharedNamespace(t *testing.T) (hostPort, namespace string) {
	t.Helper()
	return sharedServer.Namespace(t)
}
