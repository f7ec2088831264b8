package fred_test

import (
	"testing"

	"github.com/sluicehq/sluice/connector/connectortest"
	_ "github.com/sluicehq/sluice/connector/fred"
)

// TestRecordedAnswers runs every answer recorded from the real FRED service
// (testdata/recorded/cases.yaml) through the connector.
func TestRecordedAnswers(t *testing.T) {
	connectortest.RunRecorded(t, connectortest.Recorded{Provider: "fred", Dir: "testdata/recorded"})
}
