package fred

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
)

// recordedCase is one answer of testdata/recorded/cases.yaml (the format
// connectortest.RunRecorded reads; until it lands on main the cases are
// run through Classify directly).
type recordedCase struct {
	Name    string            `yaml:"name"`
	Source  string            `yaml:"source"`
	Meaning string            `yaml:"meaning"`
	Status  int               `yaml:"status"`
	Headers map[string]string `yaml:"headers"`
	Body    string            `yaml:"body"`
	Expect  struct {
		Class      string        `yaml:"class"`
		Code       string        `yaml:"code"`
		Message    string        `yaml:"message"`
		RetryAfter time.Duration `yaml:"retry_after"`
		More       bool          `yaml:"more"`
		Confirm    int           `yaml:"confirm"`
	} `yaml:"expect"`
}

// TestRecordedClassify runs every recorded FRED answer through Classify as
// the connector's first page asks it (offset 0, limit maxLimit).
func TestRecordedClassify(t *testing.T) {
	data, err := os.ReadFile("testdata/recorded/cases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []recordedCase
	if err := yaml.Unmarshal(data, &cases); err != nil {
		t.Fatalf("reading testdata/recorded/cases.yaml: %v", err)
	}
	if len(cases) < 8 {
		t.Fatalf("%d recorded cases, want at least 8", len(cases))
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			if tc.Name == "" || seen[tc.Name] || tc.Source == "" || tc.Meaning == "" {
				t.Fatalf("case needs a unique name, a source and a meaning: %+v", tc)
			}
			seen[tc.Name] = true
			h := http.Header{}
			for k, v := range tc.Headers {
				h.Set(k, v)
			}
			v := Classify(connector.Head{Status: tc.Status, Header: h, Bytes: []byte(tc.Body), Complete: true,
				Format: "json", Now: connectortest.SimNow}, maxLimit)
			checkVerdict(t, v, tc)
		})
	}
}

func checkVerdict(t *testing.T, v connector.Verdict, tc recordedCase) {
	t.Helper()
	want := tc.Expect
	if want.Class == "ok" {
		if v.Err != nil {
			t.Fatalf("want a success, got %v", v.Err)
		}
		if v.More != want.More {
			t.Errorf("more = %v, want %v", v.More, want.More)
		}
		return
	}
	if v.Err == nil {
		t.Fatalf("want %s, got a success", want.Class)
	}
	if got := v.Err.Class.String(); got != want.Class {
		t.Errorf("class = %s, want %s (%v)", got, want.Class, v.Err)
	}
	if v.Err.Code != want.Code {
		t.Errorf("code = %q, want %q", v.Err.Code, want.Code)
	}
	if !strings.Contains(v.Err.Message, want.Message) {
		t.Errorf("message %q does not contain %q", v.Err.Message, want.Message)
	}
	if want.RetryAfter != 0 && v.Err.RetryAfter != want.RetryAfter {
		t.Errorf("retry after = %s, want %s", v.Err.RetryAfter, want.RetryAfter)
	}
	if v.Err.Confirm != want.Confirm {
		t.Errorf("confirm = %d, want %d", v.Err.Confirm, want.Confirm)
	}
}
