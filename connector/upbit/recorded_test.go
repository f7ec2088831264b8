package upbit_test

import (
	"testing"

	"github.com/sluicehq/sluice/connector/connectortest"
)

// TestRecordedAnswers runs UPBIT's recorded real answers
// (testdata/recorded/cases.yaml) through the connector.
func TestRecordedAnswers(t *testing.T) {
	connectortest.RunRecorded(t, connectortest.Recorded{Provider: "upbit", Dir: "testdata/recorded"})
}
