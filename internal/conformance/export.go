package conformance

import (
	"bytes"
	"testing"

	"github.com/pifleet/sessionlog/internal/tree"
)

// ExpectedExport is what the cluster's export of a pi file must be: the
// file itself, except for the lines pi skips (invalid, blank) and a
// repeated identical header line (pi writes one when it recovers an empty
// file). A line's CR before its newline is kept, as import keeps it.
func ExpectedExport(t testing.TB, data []byte) string {
	t.Helper()
	f, err := tree.Read(data, tree.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	skipped := map[int]bool{}
	for _, s := range f.Skipped {
		skipped[s.Line] = true
	}
	var header []byte
	var out bytes.Buffer
	for k, line := range bytes.SplitAfter(data, []byte("\n")) {
		body := bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case len(bytes.TrimSpace(body)) == 0, skipped[k+1]:
			continue
		case k+1 == f.HeaderLine:
			header = body
		case header != nil && bytes.Equal(body, header):
			continue
		}
		out.Write(body)
		out.WriteByte('\n')
	}
	return out.String()
}
