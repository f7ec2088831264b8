package simulator_test

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/simtest"
)

// TestTestCredentials: one value for every credential the fixture names
// (each provider's package checks its shapes), deterministic, none for no
// registry.
func TestTestCredentials(t *testing.T) {
	reg := simtest.Fixture(t)
	creds := simulator.TestCredentials(reg)
	want := []string{"KIS_APP_KEY", "KIS_APP_SECRET", "ECOS_API_KEY", "FRED_API_KEY", "UPBIT_ACCESS_KEY", "UPBIT_SECRET_KEY", "DATAGO_SERVICE_KEY"}
	if len(creds) != len(want) {
		t.Errorf("got %d credentials, want %d: %v", len(creds), len(want), creds)
	}
	for _, env := range want {
		if creds[env] == "" {
			t.Errorf("no %s", env)
		}
	}
	again := simulator.TestCredentials(reg)
	for env, v := range creds {
		if again[env] != v {
			t.Errorf("%s not deterministic", env)
		}
	}
	if len(simulator.TestCredentials(nil)) != 0 {
		t.Error("nil registry gave credentials")
	}
}

func TestTestCredentialsCoverDefaultRegistry(t *testing.T) {
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatalf("loading default registry: %v", err)
	}
	creds := simulator.TestCredentials(reg)
	for _, p := range reg.Providers {
		for _, role := range p.Auth.Roles() {
			if creds[p.Auth.Credentials[role]] == "" {
				t.Errorf("provider %s role %s (%s): no test credential", p.ID, role, p.Auth.Credentials[role])
			}
		}
	}
}

// TestEveryProviderIsServed: with simulator/all linked, every connector of
// the default registry has its simulated provider.
func TestEveryProviderIsServed(t *testing.T) {
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulator.New(simulator.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	// The connectors the registry's providers use (a provider's id when
	// it names none), sorted: counted from the registry, not written
	// down here.
	var want []string
	for _, p := range reg.Providers {
		c := p.Connector
		if c == "" {
			c = p.ID
		}
		if !slices.Contains(want, c) {
			want = append(want, c)
		}
	}
	slices.Sort(want)
	if got := sim.Served(); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("served %v, want the registry's connectors %v", got, want)
	}
}
