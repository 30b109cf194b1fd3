package session

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/tree"
)

// TestInheritRoundTrip: a path's lines and sequences come back from its
// inherit records whole and in order, also when lines are large enough to
// need several records (one over a record's chunk has one to itself), and
// from any order of the records, a repeated set ignored.
func TestInheritRoundTrip(t *testing.T) {
	for _, sizes := range [][]int{{}, {10}, {10, 20, 30}, {400 << 10, 300 << 10, 10, 700 << 10, 5}} {
		path := tree.NewSession(tree.NewHeader("01a24fe6-fec2-7008-b027-50931202e9a5", "2026-12-07T10:00:00.000Z", "/w", ""))
		var seqs []uint64
		parent := ""
		for i, n := range sizes {
			id := fmt.Sprintf("%08x", i+1)
			e, err := tree.ParseEntry(fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-12-07T10:00:00.000Z","message":{"role":"user","content":%q}}`, id, jsonOrNull(parent), strings.Repeat("x", n)))
			if err != nil {
				t.Fatal(err)
			}
			path.Append(e)
			seqs = append(seqs, uint64(100+i))
			parent = id
		}
		recs := InheritRecords(path, seqs)
		for _, r := range recs {
			if len(r.Data) > inheritChunk && bytes.IndexByte(r.Data, '\n') >= 0 {
				t.Fatalf("a record of %d bytes holds several lines", len(r.Data))
			}
		}
		var stored []Stored
		for i := len(recs) - 1; i >= 0; i-- { // any order
			stored = append(stored, Stored{Seq: uint64(1000 + i), Record: recs[i]})
		}
		stored = append(stored, stored...) // a second writer's set
		lines, got, ok := Inherited(stored)
		if !ok || len(lines) != path.Len() || !slices.Equal(got, seqs) {
			t.Fatalf("sizes %v: %d records gave %d lines, seqs %v, ok %v", sizes, len(recs), len(lines), got, ok)
		}
		for i, l := range lines {
			if !bytes.Equal(l, path.Entry(i).Raw) {
				t.Fatalf("sizes %v: line %d differs", sizes, i)
			}
		}
		if len(recs) > 1 {
			if _, _, ok := Inherited(stored[:1]); ok {
				t.Fatalf("sizes %v: a part of the set counted as whole", sizes)
			}
		}
	}
}

func jsonOrNull(id string) string {
	if id == "" {
		return "null"
	}
	return `"` + id + `"`
}

// TestPathSeqs: a fork's inherited entries get sequences that increase
// below its header: the parent's when they qualify, else the ones just
// before the header, else (a header too early) the header's own.
func TestPathSeqs(t *testing.T) {
	for _, c := range []struct {
		parent []uint64
		header uint64
		want   []uint64
	}{
		{[]uint64{3, 5, 9}, 20, []uint64{3, 5, 9}},     // the parent's, in the fork's stream
		{[]uint64{3, 5, 90}, 20, []uint64{17, 18, 19}}, // another shard's, higher
		{[]uint64{0, 0, 0}, 20, []uint64{17, 18, 19}},  // unknown
		{[]uint64{3, 3, 9}, 20, []uint64{17, 18, 19}},  // not increasing
		{[]uint64{30, 50, 90}, 2, []uint64{2, 2, 2}},   // a header too early
		{nil, 7, nil},
	} {
		if got := PathSeqs(slices.Clone(c.parent), c.header); !slices.Equal(got, c.want) {
			t.Errorf("PathSeqs(%v, %d) = %v, want %v", c.parent, c.header, got, c.want)
		}
	}
}
