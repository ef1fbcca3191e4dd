package output

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// TableWriter is the table renderer of every command: columns aligned with two
// spaces between them (one for a compact table), rows written as they come
// and aligned at Flush. It is text/tabwriter with one set of settings, so
// that all of stoatctl's tables look alike.
type TableWriter struct {
	tw *tabwriter.Writer
}

// NewTable returns a table writing to w, with a header row when header is
// not empty.
func NewTable(w io.Writer, header ...string) *TableWriter {
	return newTable(w, 2, header)
}

// NewCompactTable is NewTable with one space between columns, for a
// wide table that must stay within 80 columns.
func NewCompactTable(w io.Writer, header ...string) *TableWriter {
	return newTable(w, 1, header)
}

func newTable(w io.Writer, padding int, header []string) *TableWriter {
	t := &TableWriter{tw: tabwriter.NewWriter(w, 0, 0, padding, ' ', 0)}
	if len(header) > 0 {
		t.Row(header...)
	}
	return t
}

// Row adds a row. A cell's tabs and newlines would break the alignment;
// they are written as spaces.
func (t *TableWriter) Row(cells ...string) {
	for i, c := range cells {
		if strings.ContainsAny(c, "\t\n") {
			cells[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(c)
		}
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

// Rowf adds a row from a format whose cells are separated by tabs.
func (t *TableWriter) Rowf(format string, args ...any) {
	fmt.Fprintf(t.tw, format+"\n", args...)
}

// Write adds raw text, cells separated by tabs and rows ended by newlines,
// so that fmt.Fprintf can write a row too.
func (t *TableWriter) Write(p []byte) (int, error) { return t.tw.Write(p) }

// Flush aligns and writes the rows added since the last Flush.
func (t *TableWriter) Flush() error { return t.tw.Flush() }
