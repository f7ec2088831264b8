package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// newTable starts a table on out, its columns two spaces apart, with the
// header row (cells separated by tabs) written; rows follow with
// fmt.Fprintf, and Flush ends the table.
func newTable(out io.Writer, header string) *tabwriter.Writer {
	t := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(t, header)
	return t
}
