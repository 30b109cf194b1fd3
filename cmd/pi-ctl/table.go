package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/cli"
	"github.com/pifleet/sessionlog/internal/wire"
)

// table is cli.Table under the names pi-ctl's commands use: rows in
// columns two spaces apart, measured in terminal columns.
type table struct{ cli.Table }

// row adds a row; the first row added is the heading.
func (t *table) row(cells ...string) { t.Row(cells...) }

// write prints the table; the last column is not padded.
func (t *table) write(w io.Writer) error { return t.Write(w) }

// writeJSON prints a JSON reply as the node sent it, on its own line.
var writeJSON = cli.WriteJSON

// encodeJSON prints v as the API encodes it (wire.EncodeJSON), on its own
// line.
func encodeJSON(w io.Writer, v any) error {
	out, err := wire.EncodeJSON(v)
	if err != nil {
		return err
	}
	return writeJSON(w, out)
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
