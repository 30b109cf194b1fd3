package jetstream

import (
	"fmt"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/pifleet/sessionlog/internal/session"
)

// asmRec is one record read: its sequence and batch headers.
type asmRec struct {
	seq    uint64
	batch  string
	commit bool
}

func plainRec(seq uint64) asmRec                { return asmRec{seq: seq} }
func partRec(seq uint64, batch string) asmRec   { return asmRec{seq: seq, batch: batch} }
func commitRec(seq uint64, batch string) asmRec { return asmRec{seq: seq, batch: batch, commit: true} }

// TestBatchAssembler feeds records one at a time and checks what each add
// releases, and what is held at the end.
func TestBatchAssembler(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []asmRec
		want [][]uint64 // released by each add, in order
		held uint64     // last sequence held at the end (0: none)
	}{
		{"plain records pass through", []asmRec{plainRec(1), plainRec(2), plainRec(3)},
			[][]uint64{{1}, {2}, {3}}, 0},
		{"a whole batch is released at its commit", []asmRec{partRec(1, "A"), partRec(2, "A"), commitRec(3, "A")},
			[][]uint64{nil, nil, {1, 2, 3}}, 0},
		{"a batch between plain records", []asmRec{plainRec(1), partRec(2, "A"), commitRec(3, "A"), plainRec(4)},
			[][]uint64{{1}, nil, {2, 3}, {4}}, 0},
		{"a batch of one: commit without start", []asmRec{commitRec(5, "A")},
			[][]uint64{{5}}, 0},
		{"reading began inside a batch: its rest at the commit", []asmRec{partRec(7, "A"), commitRec(8, "A")},
			[][]uint64{nil, {7, 8}}, 0},
		{"a sequence gap inside a batch changes nothing", []asmRec{partRec(1, "A"), commitRec(5, "A")},
			[][]uint64{nil, {1, 5}}, 0},
		{"a new batch id releases the one held", []asmRec{partRec(1, "A"), partRec(2, "A"), partRec(3, "B"), commitRec(4, "B")},
			[][]uint64{nil, nil, {1, 2}, {3, 4}}, 0},
		{"another batch's commit releases the one held, then itself", []asmRec{partRec(1, "A"), commitRec(2, "B")},
			[][]uint64{nil, {1, 2}}, 0},
		{"a plain record releases an abandoned batch first", []asmRec{partRec(1, "A"), plainRec(2)},
			[][]uint64{nil, {1, 2}}, 0},
		{"interleaved batches: nothing lost, order kept", []asmRec{partRec(1, "A"), partRec(2, "B"), commitRec(3, "A"), commitRec(4, "B")},
			[][]uint64{nil, {1}, {2, 3}, {4}}, 0},
		{"a batch without its commit stays held", []asmRec{plainRec(1), partRec(2, "A"), partRec(3, "A")},
			[][]uint64{{1}, nil, nil}, 3},
		{"a commit header outside a batch is no batch", []asmRec{{seq: 1, commit: true}, plainRec(2)},
			[][]uint64{{1}, {2}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a batchAssembler
			for i, r := range tc.in {
				got := seqsOf(a.add(nil, storedAt(r.seq), batchHeaders{id: r.batch, commit: r.commit}))
				if !slices.Equal(got, tc.want[i]) {
					t.Fatalf("add #%d (seq %d): released %v, want %v", i, r.seq, got, tc.want[i])
				}
			}
			held, ok := a.heldThrough()
			if ok != (tc.held != 0) || held != tc.held {
				t.Fatalf("held through %d (%v), want %d", held, ok, tc.held)
			}
		})
	}
}

// TestBatchAssemblerAppends checks that add extends the slice it is given
// and that reusing the held array does not change records released before.
func TestBatchAssemblerAppends(t *testing.T) {
	var a batchAssembler
	ready := a.add(nil, storedAt(1), batchHeaders{})
	ready = a.add(ready, storedAt(2), batchHeaders{id: "A"})
	ready = a.add(ready, storedAt(3), batchHeaders{id: "A", commit: true})
	first := ready
	ready = a.add(nil, storedAt(4), batchHeaders{id: "B"})
	ready = a.add(ready, storedAt(5), batchHeaders{id: "B", commit: true})
	if got := fmt.Sprint(seqsOf(first), seqsOf(ready)); got != "[1 2 3] [4 5]" {
		t.Fatalf("released %s, want [1 2 3] [4 5]", got)
	}
}

func TestBatchOf(t *testing.T) {
	h := nats.Header{}
	if b := batchOf(h); b != (batchHeaders{}) {
		t.Fatalf("no headers: %+v", b)
	}
	h.Set(jetstreamext.BatchIDHeader, "b1")
	h.Set(jetstreamext.BatchSeqHeader, "3")
	if b := batchOf(h); b != (batchHeaders{id: "b1"}) {
		t.Fatalf("inside a batch: %+v", b)
	}
	h.Set(jetstreamext.BatchCommitHeader, "1")
	if b := batchOf(h); b != (batchHeaders{id: "b1", commit: true}) {
		t.Fatalf("commit: %+v", b)
	}
}

func storedAt(seq uint64) session.Stored { return session.Stored{Session: "s", Seq: seq} }

func seqsOf(recs []session.Stored) []uint64 {
	var seqs []uint64
	for _, r := range recs {
		seqs = append(seqs, r.Seq)
	}
	return seqs
}
