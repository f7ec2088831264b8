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
	return startTable(out, header, 0)
}

// newFigureTable is newTable for a table of figures: every cell is
// aligned right, so each cell of a row, the last too, ends with a tab.
func newFigureTable(out io.Writer, header string) *tabwriter.Writer {
	return startTable(out, header, tabwriter.AlignRight)
}

func startTable(out io.Writer, header string, flags uint) *tabwriter.Writer {
	t := tabwriter.NewWriter(out, 0, 0, 2, ' ', flags)
	fmt.Fprintln(t, header)
	return t
}
