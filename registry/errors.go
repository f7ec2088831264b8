package registry

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one finding about a registry file: where it is (file, line,
// YAML path) and what is wrong, in words a user can act on.
type Problem struct {
	File string // file name as shown to the user, e.g. registry/datasets/tour.yaml
	Line int    // 1-based line, 0 when unknown
	Path string // YAML path inside the document, e.g. rate_limits[0].requests_per_day
	Msg  string
}

// String formats the problem as file:line: path: message.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Errors is every problem found while loading a registry. Loading never
// stops at the first problem: a user fixes them all in one pass.
type Errors []Problem

// Error lists every problem, one per line.
func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, p := range e {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func (e Errors) sorted() Errors {
	out := append(Errors(nil), e...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out
}
