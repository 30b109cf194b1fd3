package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/termtext"
)

// table lays out rows in columns two spaces apart. Unlike text/tabwriter
// it measures terminal columns, so session names in CJK or with emoji do
// not push the columns after them out of line.
type table struct {
	rows [][]string
}

// row adds a row; the first row added is the heading.
func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the table; the last column is not padded.
func (t *table) write(w io.Writer) error {
	var widths []int
	for _, r := range t.rows {
		for k, c := range r {
			if k >= len(widths) {
				widths = append(widths, 0)
			}
			widths[k] = max(widths[k], termtext.Width(c))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
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

// writeJSON prints a JSON reply as the node sent it, on its own line.
func writeJSON(w io.Writer, body []byte) error {
	if len(body) == 0 || body[len(body)-1] != '\n' {
		body = append(body[:len(body):len(body)], '\n')
	}
	_, err := w.Write(body)
	return err
}

// keyValues prints "key  value" lines with the keys in one column, the
// layout of "file info".
func keyValues(w io.Writer, pairs ...string) error {
	var b strings.Builder
	for k := 0; k+1 < len(pairs); k += 2 {
		fmt.Fprintf(&b, "%-10s %s\n", pairs[k], pairs[k+1])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shortTime writes a time of the API for a table: UTC, to the second.
func shortTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// parseSince reads --since: an RFC 3339 time, or a duration meaning that
// long before now ("24h", "90m").
func parseSince(s string, now time.Time) (string, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return "", fmt.Errorf("--since %s: a duration back from now must be positive", s)
		}
		return now.Add(-d).UTC().Format(time.RFC3339Nano), nil
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		return "", fmt.Errorf("--since %q: want an RFC 3339 time (2026-11-30T08:00:00Z) or a duration back from now (24h)", s)
	}
	return s, nil
}
