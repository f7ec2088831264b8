package datago_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/datago"
)

// TestRecordedAnswers runs every recorded answer through the real
// connector (connectortest.RunRecorded): Fetch or Probe of the sample
// dataset against a loopback server that answers as recorded.
func TestRecordedAnswers(t *testing.T) {
	connectortest.RunRecorded(t, connectortest.Recorded{Provider: "datago", Dir: "testdata/recorded"})
}

// TestRecordedClassify runs every recorded answer through Classify alone,
// the way the connector sees it (the head of the body, the frozen clock,
// the provider's timezone): the verdict itself carries the provider's code,
// Confirm on the disputed answers, and says whether more pages follow when
// the head holds the counts.
func TestRecordedClassify(t *testing.T) {
	cases, err := connectortest.LoadRecorded(filepath.Join("testdata", "recorded"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 16 {
		t.Errorf("%d recorded answers, want at least 16", len(cases))
	}
	kst, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		kst = time.FixedZone("KST", 9*3600)
	}
	now := connectortest.SimNow
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			if !strings.HasPrefix(tc.Source, "https://") {
				t.Fatalf("source %q is not a public address", tc.Source)
			}
			body := []byte(tc.Body)
			h := http.Header{}
			for k, v := range tc.Headers {
				h.Set(k, v)
			}
			head, complete := body, true
			if len(head) > connector.HeadSize {
				head, complete = head[:connector.HeadSize], false
			}
			v := datago.Classify(connector.Head{Status: tc.Status, Header: h, Bytes: head, Complete: complete,
				Format: "json", Now: now, Location: kst})
			want := tc.Expect
			if want.Class == "ok" {
				if v.Err != nil {
					t.Fatalf("got %s (%s) %q, want a success", v.Err.Class, v.Err.Code, v.Err.Message)
				}
				if want.More != nil && v.More != *want.More {
					t.Errorf("more = %v, want %v", v.More, *want.More)
				}
				return
			}
			if v.Err == nil {
				t.Fatalf("success, want %s (%s)", want.Class, want.Code)
			}
			e := v.Err
			if e.Class.String() != want.Class || e.Code != want.Code {
				t.Fatalf("got %s (%s) %q, want %s (%s)", e.Class, e.Code, e.Message, want.Class, want.Code)
			}
			if !strings.Contains(e.Message, want.Message) {
				t.Errorf("message %q does not hold %q", e.Message, want.Message)
			}
			if e.Confirm != want.Confirm {
				t.Errorf("confirm = %d, want %d", e.Confirm, want.Confirm)
			}
			if want.RetryAfter != "" {
				d, err := time.ParseDuration(want.RetryAfter)
				if err != nil {
					t.Fatal(err)
				}
				if e.RetryAfter != d {
					t.Errorf("retry after %v, want %v", e.RetryAfter, d)
				}
			}
			switch want.Reset {
			case "":
			case "next_midnight":
				if m := connector.NextMidnight(now, kst); !e.ResetAt.Equal(m) || e.RetryAfter != 0 {
					t.Errorf("reset at %v (retry after %v), want the next midnight in Seoul %v", e.ResetAt, e.RetryAfter, m)
				}
			default:
				t.Fatalf("unknown reset %q", want.Reset)
			}
		})
	}
}
