package datago_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/datago"
)

// recordedCase is one entry of testdata/recorded/cases.yaml (the format of
// the shared corpus; see connectortest.RunRecorded once it lands).
type recordedCase struct {
	Name      string            `yaml:"name"`
	Source    string            `yaml:"source"`
	Meaning   string            `yaml:"meaning"`
	Reasoning string            `yaml:"reasoning"`
	Probe     bool              `yaml:"probe"`
	Dataset   string            `yaml:"dataset"`
	Path      string            `yaml:"path"`
	Status    int               `yaml:"status"`
	Headers   map[string]string `yaml:"headers"`
	Body      string            `yaml:"body"`
	BodyFile  string            `yaml:"body_file"`
	Expect    struct {
		Class      string `yaml:"class"`
		Code       string `yaml:"code"`
		Message    string `yaml:"message"`
		RetryAfter string `yaml:"retry_after"`
		Reset      string `yaml:"reset"`
		More       *bool  `yaml:"more"`
		Confirm    int    `yaml:"confirm"`
	} `yaml:"expect"`
}

// TestRecordedClassify runs every recorded answer through Classify, the
// way the connector sees it: the head of the body, the frozen clock of the
// connector tests and the provider's timezone.
func TestRecordedClassify(t *testing.T) {
	dir := filepath.Join("testdata", "recorded")
	raw, err := os.ReadFile(filepath.Join(dir, "cases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []recordedCase
	if err := yaml.Unmarshal(raw, &cases); err != nil {
		t.Fatalf("reading cases.yaml: %v", err)
	}
	if len(cases) < 16 {
		t.Errorf("%d recorded answers, want at least 16", len(cases))
	}
	kst, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		kst = time.FixedZone("KST", 9*3600)
	}
	now := connectortest.SimNow
	seen := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			if tc.Name == "" || seen[tc.Name] {
				t.Fatalf("name %q is empty or not unique", tc.Name)
			}
			seen[tc.Name] = true
			if !strings.HasPrefix(tc.Source, "https://") || tc.Meaning == "" {
				t.Fatalf("source %q and meaning %q are required", tc.Source, tc.Meaning)
			}
			body := []byte(tc.Body)
			if tc.BodyFile != "" {
				if body, err = os.ReadFile(filepath.Join(dir, tc.BodyFile)); err != nil {
					t.Fatal(err)
				}
			}
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
