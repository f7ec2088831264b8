package simulator

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
)

// TestNewNeedsALinkedProvider: a simulator of a registry none of whose
// connectors has a simulated provider linked would serve nothing; New
// says so instead of answering 404 to every request.
func TestNewNeedsALinkedProvider(t *testing.T) {
	p := &registry.Provider{ID: "nosuch", Location: time.UTC}
	reg := &registry.Registry{Providers: []*registry.Provider{p}}
	_, err := New(Options{Registry: reg})
	if err == nil || !strings.Contains(err.Error(), "no simulated provider is linked for the registry's connectors (nosuch)") ||
		!strings.Contains(err.Error(), "simulator/all") {
		t.Errorf("New = %v", err)
	}
	if _, err := New(Options{Registry: &registry.Registry{}}); err != nil {
		t.Errorf("an empty registry: %v", err)
	}
}
