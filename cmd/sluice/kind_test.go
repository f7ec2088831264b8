package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/registry"
)

// TestWorkflowKindsFilterTheList: against a real embedded server (the
// shared one, in a namespace of its own), the
// watches `sluice watch sync` starts, the daily run `sluice ingest`
// starts and the one a schedule starts each carry their SluiceKind, so
// the workflow list filters to them.
func TestWorkflowKindsFilterTheList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	addr, ns := sharedNamespace(t)
	// devTestRegistry's 9 watches, not the default registry's 193: a
	// few of each kind are as good a check of the filter.
	t.Cleanup(func() { registryDir = "" }) // the flag's variable is package state
	conn := []string{"--temporal", addr, "--namespace", ns, "--registry", devTestRegistry}
	for _, args := range [][]string{
		{"watch", "sync"},
		{"ingest", "--date", "2026-11-20", "--detach"},
		{"schedules", "sync"},
		{"schedules", "trigger", "sluice-upbit-0005-daily"},
	} {
		if out, err := runSluice(ctx, append(args, conn...)...); err != nil {
			t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	reg, err := registry.LoadDir(devTestRegistry, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	probed := 0
	for _, ds := range reg.Datasets {
		if ds.Probe != nil && ds.Probe.IntervalMinutes > 0 {
			probed++
		}
	}
	tc, err := client.Dial(client.Options{HostPort: addr, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	count := func(q string) int64 {
		resp, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: ns, Query: q})
		if err != nil {
			t.Fatalf("counting %s: %v", q, err)
		}
		return resp.GetCount()
	}
	if probed < 2 {
		t.Fatalf("%s probes %d datasets: the test would check little", devTestRegistry, probed)
	}
	// Visibility trails the starts: wait for it (a bound, not a timing
	// assertion).
	want := map[string]int64{"watch": int64(probed), "daily": 2}
	var got map[string]int64
	for {
		got = map[string]int64{}
		for k := range want {
			got[k] = count(fmt.Sprintf("SluiceKind = '%s'", k))
		}
		if fmt.Sprint(got) == fmt.Sprint(want) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("workflows by kind %v, want %v", got, want)
	}
	if n := count("SluiceKind = 'daily' AND WorkflowType = 'DailyIngest'"); n != 2 {
		t.Errorf("%d daily runs of type DailyIngest, want 2", n)
	}
}
