package worker

import "testing"

// TestParsePromote: the --promote values, and an unknown one refused.
func TestParsePromote(t *testing.T) {
	for in, want := range map[string]Promote{"": PromoteIfNone, "if-none": PromoteIfNone, "never": PromoteNever, "always": PromoteAlways} {
		got, err := ParsePromote(in)
		if err != nil || got != want {
			t.Errorf("ParsePromote(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParsePromote("sometimes"); err == nil {
		t.Error("ParsePromote(\"sometimes\") accepted")
	}
}
