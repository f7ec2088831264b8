package ecos_test

import (
	"testing"

	"github.com/sluicehq/sluice/connector/connectortest"
	_ "github.com/sluicehq/sluice/connector/ecos"
)

// TestRecordedAnswers runs every answer recorded from the real ECOS service
// (testdata/recorded/cases.yaml) through the connector.
func TestRecordedAnswers(t *testing.T) {
	connectortest.RunRecorded(t, connectortest.Recorded{Provider: "ecos", Dir: "testdata/recorded"})
}
