//go:build tools

// Package tools pins the versions of build tools that cannot be installed
// with a plain `go install pkg@version` on this Go release: workflowcheck
// v0.3.0 requires a golang.org/x/tools too old to compile with Go 1.26, so
// this module raises it. The Makefile builds them from here into ../bin.
package tools

import (
	_ "go.temporal.io/sdk/contrib/tools/workflowcheck"
)
