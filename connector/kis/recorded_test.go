package kis_test

import (
	"testing"

	"github.com/sluicehq/sluice/connector/connectortest"
)

// TestRecordedAnswers runs KIS's recorded real answers
// (testdata/recorded/cases.yaml) through the connector; tokenP answers a
// good token unless a case answers there itself.
func TestRecordedAnswers(t *testing.T) {
	connectortest.RunRecorded(t, connectortest.Recorded{Provider: "kis", Dir: "testdata/recorded",
		Fallback: map[string]connectortest.Answer{
			"/oauth2/tokenP": {Status: 200, Header: map[string]string{"Content-Type": "application/json;charset=UTF-8"},
				Body: `{"access_token":"PLACEHOLDER-ACCESS-TOKEN","token_type":"Bearer","expires_in":86400}`},
		}})
}
