//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/embedded"
)

// TestBackfillStartNeedsSearchAttributes: `sluice backfill start` on a
// namespace without the backfill's search attributes fails, naming them
// and printing the command that adds them; once they are added, the same
// command starts the backfill.
func TestBackfillStartNeedsSearchAttributes(t *testing.T) {
	t.Parallel()
	env(t)
	c := &cluster{t: t, ns: fmt.Sprintf("e2e-%d-backfill-attrs", clusterSeq.Add(1)), addr: temporalAddr}
	c.registerNamespace()
	start := func() (string, error) {
		cmd := exec.Command(sluiceBin, "backfill", "start", "--temporal", c.addr, "--namespace", c.ns, "--task-queue", "sluice-backfill-attrs",
			"--from", "2020-01-01", "--to", "2020-12-31", "--dataset", "fred-dgs2", "--detach")
		cmd.Env = cleanEnv()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	out, err := start()
	want := "temporal operator search-attribute create --namespace " + c.ns + " --name SluiceBackfillState --type Keyword --name SluiceBackfillPercent --type Int"
	if err == nil || !strings.Contains(out, want) || !strings.Contains(out, "SluiceBackfillState and SluiceBackfillPercent") {
		t.Fatalf("backfill start on a namespace without the attributes: err %v, output:\n%s\nwant the refusal naming them and %q", err, out, want)
	}
	if strings.Contains(out, "run ") {
		t.Errorf("the refused start printed a run:\n%s", out)
	}

	tc, err := client.Dial(client.Options{HostPort: c.addr, Namespace: c.ns, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := tc.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: c.ns, SearchAttributes: embedded.SearchAttributes}); err != nil {
		t.Fatal(err)
	}
	out, err = start()
	if err != nil || !strings.Contains(out, "backfill backfill-2020-01-01-2020-12-31-") {
		t.Fatalf("backfill start once the attributes exist: err %v, output:\n%s", err, out)
	}
	id := strings.Fields(out)[1]
	if err := tc.TerminateWorkflow(ctx, id, "", "test done"); err != nil {
		t.Errorf("terminating %s: %v", id, err)
	}
}
