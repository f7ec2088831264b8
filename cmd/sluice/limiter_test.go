package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestLimiterCommandNamesKnownScopes: a scope the registry does not hold
// is refused before anything is dialled, naming the known ones.
func TestLimiterCommandNamesKnownScopes(t *testing.T) {
	for _, sub := range []string{"state", "reconfigure"} {
		cmd := newLimiterCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs([]string{sub, "--scope", "kis/nope", "--temporal", "127.0.0.1:1"})
		err := cmd.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), `--scope "kis/nope"`) || !strings.Contains(err.Error(), "kis/key") {
			t.Errorf("limiter %s --scope kis/nope: %v", sub, err)
		}
	}
}
