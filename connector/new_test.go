package connector_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/connector"
	_ "github.com/sluicehq/sluice/connector/all"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/datago"
	"github.com/sluicehq/sluice/connector/ecos"
	"github.com/sluicehq/sluice/connector/fred"
	"github.com/sluicehq/sluice/connector/kis"
	"github.com/sluicehq/sluice/connector/upbit"
	"github.com/sluicehq/sluice/registry"
)

func TestNewDispatchesOnTheConnectorName(t *testing.T) {
	reg := connectortest.Registry(t)
	want := map[string]any{"kis": &kis.Connector{}, "ecos": &ecos.Connector{}, "fred": &fred.Connector{}, "upbit": &upbit.Connector{}, "datago": &datago.Connector{}}
	if got := strings.Join(connector.Registered(), ","); got != "datago,ecos,fred,kis,upbit" {
		t.Errorf("Registered() = %s", got)
	}
	for _, p := range reg.Providers {
		c, err := connector.New(p, connector.Options{TokenStore: nil})
		if err != nil {
			t.Fatalf("New(%s): %v", p.ID, err)
		}
		if w, ok := want[p.ID]; !ok || fmt.Sprintf("%T", c) != fmt.Sprintf("%T", w) {
			t.Errorf("New(%s) = %T", p.ID, c)
		}
	}
	_, err := connector.New(&registry.Provider{ID: "x", Connector: "nope", BaseURL: "https://x"}, connector.Options{})
	if err == nil || !strings.Contains(err.Error(), "no connector named \"nope\"") || !strings.Contains(err.Error(), "registered: datago") {
		t.Errorf("unknown connector: %v", err)
	}
	if _, err := connector.New(nil, connector.Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
}

// goTool returns the go command on PATH.
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the import check needs the go command on PATH: %v", err)
	}
	return p
}

// TestConnectorsNeverImportTheSimulator keeps the connectors and the
// simulator independent readings of the wire facts: a bug shared between
// them would pass every test.
func TestConnectorsNeverImportTheSimulator(t *testing.T) {
	const mod = "github.com/sluicehq/sluice/"
	deps := func(pattern string) ([]string, error) {
		out, err := exec.Command(goTool(t), "list", "-deps", "-f", "{{.ImportPath}}", pattern).CombinedOutput()
		return strings.Fields(string(out)), err
	}
	conn, err := deps(mod + "connector/...")
	if err != nil {
		t.Fatalf("go list connector: %v\n%s", err, strings.Join(conn, "\n"))
	}
	if len(conn) < 10 {
		t.Fatalf("go list found too little: %v", conn)
	}
	for _, d := range conn {
		if d == mod+"simulator" || strings.HasPrefix(d, mod+"simulator/") {
			t.Errorf("a connector package depends on %s", d)
		}
	}
	sim, err := deps(mod + "simulator/...")
	if err != nil {
		t.Logf("the simulator does not list (yet?): %v %s", err, strings.Join(sim, " "))
		return
	}
	for _, d := range sim {
		if d == mod+"connector" || strings.HasPrefix(d, mod+"connector/") {
			t.Errorf("the simulator depends on %s", d)
		}
	}
}
