package embedded

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
)

// TestSearchAttributesRegistered: Start registers the backfill's search
// attributes, and a restart on the same data keeps them without error.
func TestSearchAttributesRegistered(t *testing.T) {
	dataDir := t.TempDir()
	for round := range 2 {
		s := startServer(t, dataDir, false)
		c := dial(t, s)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: s.Namespace()})
		cancel()
		if err != nil {
			t.Fatalf("round %d: listing search attributes: %v", round, err)
		}
		for name, typ := range SearchAttributes {
			if got, ok := resp.GetCustomAttributes()[name]; !ok || got != typ {
				t.Errorf("round %d: %s = %v (present %v), want %v", round, name, got, ok, typ)
			}
		}
		c.Close()
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	}
}
