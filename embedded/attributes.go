package embedded

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sluicehq/sluice/internal/kind"
)

// SearchAttributes are the custom search attributes Start registers on
// its namespace: every Sluice workflow's kind (internal/kind: SluiceKind =
// "watch" lists the watches), and a Backfill workflow keeps them current, so the Web UI's
// workflow list can show each backfill's state and share done (package
// workflows, BackfillStateAttr and BackfillPercentAttr). A server Sluice
// does not embed needs them added once by its operator (docs/backfill.md).
var SearchAttributes = map[string]enumspb.IndexedValueType{
	"SluiceBackfillState":   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	kind.Name:               enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	"SluiceBackfillPercent": enumspb.INDEXED_VALUE_TYPE_INT,
}

// registerSearchAttributes adds SearchAttributes to namespace, leaving
// those already there.
func registerSearchAttributes(ctx context.Context, hostPort, namespace string, creds credentials.TransportCredentials) error {
	conn, err := grpc.NewClient(hostPort, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("connecting to Temporal frontend %s: %w", hostPort, err)
	}
	defer conn.Close()
	op := operatorservice.NewOperatorServiceClient(conn)
	cctx, cancel := context.WithTimeout(ctx, namespaceWait)
	defer cancel()
	// One at a time: a server started by an older Sluice has some of
	// them, and those must not keep the new ones out.
	for name, typ := range SearchAttributes {
		_, err = op.AddSearchAttributes(cctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace,
			SearchAttributes: map[string]enumspb.IndexedValueType{name: typ}})
		var exists *serviceerror.AlreadyExists
		if err != nil && !errors.As(err, &exists) {
			return fmt.Errorf("registering search attribute %s on namespace %q: %w", name, namespace, err)
		}
	}
	return nil
}
