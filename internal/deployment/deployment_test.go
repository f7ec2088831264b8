package deployment

import (
	"strings"
	"testing"
)

// TestBuildID: a test binary carries no clean git revision of its own
// tree in its build info, so its build id is the hash of the executable:
// "bin-" and 12 hex digits, the same on every call.
func TestBuildID(t *testing.T) {
	a, err := BuildID()
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildID()
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("build ids differ: %q, %q", a, b)
	}
	if !(strings.HasPrefix(a, "bin-") || strings.HasPrefix(a, "git-")) || len(a) != 16 {
		t.Fatalf("build id %q, want bin- or git- and 12 hex digits", a)
	}
	if strings.ContainsAny(a, ".:/") {
		t.Fatalf("build id %q holds a character deployment versions reserve", a)
	}
}

// TestName: a deployment name never holds "." (reserved by the server).
func TestName(t *testing.T) {
	for tq, want := range map[string]string{"sluice": "sluice", "sluice.prod": "sluice-prod", "a.b.c": "a-b-c"} {
		if got := Name(tq); got != want {
			t.Errorf("Name(%q) = %q, want %q", tq, got, want)
		}
	}
}
