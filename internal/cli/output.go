package cli

import (
	"io"
	"os"
	"strings"

	"github.com/pifleet/sessionlog/internal/termtext"
)

// Table lays out rows in columns two spaces apart. Unlike text/tabwriter
// it measures terminal columns, so session names in CJK or with emoji do
// not push the columns after them out of line.
type Table struct {
	Rows [][]string
}

// Row adds a row; the first row added is the heading.
func (t *Table) Row(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write prints the table; the last column is not padded.
func (t *Table) Write(w io.Writer) error {
	var widths []int
	for _, r := range t.Rows {
		for k, c := range r {
			if k >= len(widths) {
				widths = append(widths, 0)
			}
			widths[k] = max(widths[k], termtext.Width(c))
		}
	}
	var b strings.Builder
	for _, r := range t.Rows {
		for k, c := range r {
			b.WriteString(c)
			if k < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[k]-termtext.Width(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints a JSON document as it is, on its own line.
func WriteJSON(w io.Writer, body []byte) error {
	if len(body) == 0 || body[len(body)-1] != '\n' {
		body = append(body[:len(body):len(body)], '\n')
	}
	_, err := w.Write(body)
	return err
}

// BarCells is the width of a progress bar.
const BarCells = 30

// IsTerminal reports whether w is a terminal (a character device), where
// a progress bar helps; in a pipe or a file it would only be noise.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
