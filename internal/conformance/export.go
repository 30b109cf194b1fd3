package conformance

import (
	"testing"

	"github.com/pifleet/sessionlog/internal/tree"
)

// ExpectedExport is ExportOf a file given as its bytes: what the
// cluster's export of it must be (a line's CR before its newline kept, as
// import keeps it).
func ExpectedExport(t testing.TB, data []byte) string {
	t.Helper()
	f, err := tree.Read(data, tree.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(ExportOf(data, f))
}
