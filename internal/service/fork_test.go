package service_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// seeded is an id source that repeats: two forks given the same one draw
// the same label ids.
func seeded(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	s[0] = byte(seed)
	return rand.NewChaCha8(s)
}

// sameButID compares two session files that differ only in the header's
// session ids (its own, and its parent's when that is a fork too: the
// pairs of ids after gotID, wantID).
func sameButID(t *testing.T, what string, got, want []byte, ids ...string) {
	t.Helper()
	g := got
	for k := 0; k+1 < len(ids); k += 2 {
		g = bytes.ReplaceAll(g, []byte(`"`+ids[k]+`"`), []byte(`"`+ids[k+1]+`"`))
	}
	if !bytes.Equal(g, want) {
		t.Fatalf("%s:\n%s\nthe copying fork's:\n%s", what, got, want)
	}
}

// testForksByReference forks every parent of the conformance vectors' fork
// cases at pi's fork point twice, with the same clock and label ids: by
// reference and by copy. The fork by reference stores its header and the
// path's labels only, and every way of reading it — the Store that applied
// it (parent held), a Store rebuilt from the log, one that evicts
// everything (read back from the log), a Writer over the bare log — gives
// the copy's file byte for byte. So does a fork of the fork, and the fork
// after its parent's path was handed to it (InheritForks) and the parent
// purged.
func testForksByReference(t *testing.T, b backend) {
	ctx := ctxT(t)
	st := openStore(t, b)
	now := func() time.Time { return time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC) }
	reg := session.NewMemForks()
	byRef := &service.Service{Log: b.log, Store: st, Cursors: b.cursors, Forks: reg, Now: now}
	copying := &service.Service{Log: b.log, Store: st, Cursors: b.cursors, Now: now}
	fork := func(svc *service.Service, sid, leaf string, pi11 bool, seed uint64) (string, uint64) {
		t.Helper()
		svc.Rand = seeded(seed)
		id, last, err := svc.Fork(ctx, sid, leaf, pi11)
		if err != nil {
			t.Fatal(err)
		}
		return id, last
	}
	// A fork by reference and its copy (ref's parent: parent).
	type pair struct{ ref, cp, parent string }
	copyOf := map[string]string{}
	var pairs []pair
	parents := map[string]string{}
	for k, c := range conformance.ForkCases(t) {
		t.Run(conformance.CaseName(c.Dir), func(t *testing.T) {
			sid, ok := parents[c.Parent]
			if !ok {
				res, err := byRef.Import(ctx, wire.ImportRequest{File: conformance.MustRead(t, filepath.Join(c.Parent, "session.jsonl"))})
				if err != nil {
					t.Fatal(err)
				}
				sid, parents[c.Parent] = res.SessionID, res.SessionID
			}
			ref, _ := fork(byRef, sid, c.LeafID, c.Pi11, uint64(k))
			cp, last := fork(copying, sid, c.LeafID, c.Pi11, uint64(k))
			waitApplied(t, st, last)
			want := exportOf(t, st, cp)
			sameButID(t, "the fork by reference", exportOf(t, st, ref), want, ref, cp)

			recs, err := b.log.Read(ctx, ref, 0)
			if err != nil {
				t.Fatal(err)
			}
			labels := bytes.Count(want, []byte(`"type":"label"`))
			if f := recs[0].Fork; f == nil || f.Session != sid || f.EntryID != c.LeafID || f.Pi11 != c.Pi11 || len(recs) != 1+labels {
				t.Fatalf("the fork by reference stored %d records (want its header and %d labels), forkOf %+v", len(recs), labels, recs[0].Fork)
			}
			if fs, _ := reg.Forks(ctx, sid); !contains(fs, ref) {
				t.Fatalf("the registry has %v for %s, not %s", fs, sid, ref)
			}
			w, err := writer.Open(ctx, b.log, ref, writer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			sameButID(t, "a Writer's tree of the fork", writerFile(w), want, ref, cp)
			sameButID(t, "the fork paged by sequence", pagedFile(t, byRef, ref), want, ref, cp)

			// A fork of the fork, at the entry pi forked at (its path's
			// last entry), by reference and by copy of the copy.
			ref2, _ := fork(byRef, ref, c.LeafID, c.Pi11, uint64(k)+100)
			cp2, last := fork(copying, cp, c.LeafID, c.Pi11, uint64(k)+100)
			waitApplied(t, st, last)
			sameButID(t, "a fork of the fork", exportOf(t, st, ref2), exportOf(t, st, cp2), ref2, cp2, ref, cp)
			pairs = append(pairs, pair{ref, cp, ""}, pair{ref2, cp2, ref})
			copyOf[ref] = cp
		})
	}
	last := lastSeq(t, b)
	for _, budget := range []int64{0, 1} {
		t.Run(fmt.Sprintf("rebuilt/budget=%d", budget), func(t *testing.T) {
			fresh := store.New(b.feed, store.Options{Log: b.log, MemoryBudget: budget})
			if err := fresh.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			waitApplied(t, fresh, last)
			for _, p := range pairs {
				sameButID(t, "rebuilt", exportOf(t, fresh, p.ref), exportOf(t, fresh, p.cp), p.ref, p.cp, p.parent, copyOf[p.parent])
			}
		})
	}

	// The parents go (as an erasure or archiving does it: their forks
	// first get their path), and every fork still reads the same.
	for _, sid := range parents {
		n, err := session.InheritForks(ctx, b.log, reg, sid, session.LogTree(b.log, sid))
		if err != nil || n == 0 {
			t.Fatalf("InheritForks(%s) wrote to %d forks: %v", sid, n, err)
		}
		if n, err = session.InheritForks(ctx, b.log, reg, sid, session.LogTree(b.log, sid)); err != nil || n != 0 {
			t.Fatalf("InheritForks again wrote to %d forks: %v", n, err)
		}
		if err := b.log.Purge(ctx, sid); err != nil {
			t.Fatal(err)
		}
	}
	last = lastSeq(t, b)
	waitApplied(t, st, last)
	fresh := store.New(b.feed, store.Options{Log: b.log})
	if err := fresh.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	waitApplied(t, fresh, last)
	for _, p := range pairs {
		want := exportOf(t, st, p.cp)
		sameButID(t, "after the parent went, the applying Store", exportOf(t, st, p.ref), want, p.ref, p.cp, p.parent, copyOf[p.parent])
		sameButID(t, "after the parent went, a rebuilt Store", exportOf(t, fresh, p.ref), want, p.ref, p.cp, p.parent, copyOf[p.parent])
		w, err := writer.Open(ctx, b.log, p.ref, writer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sameButID(t, "after the parent went, a Writer", writerFile(w), want, p.ref, p.cp, p.parent, copyOf[p.parent])
		sameButID(t, "after the parent went, paged by sequence", pagedFile(t, byRef, p.ref), want, p.ref, p.cp, p.parent, copyOf[p.parent])
	}
}

// pagedFile is the session's file as a client pages it, three entries at
// a time by sequence (the header from export): inherited entries must have
// increasing sequences below the fork's own, or a page would skip some.
func pagedFile(t *testing.T, svc *service.Service, sid string) []byte {
	t.Helper()
	file, _, err := svc.Export(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	out := append(bytes.Clone(file[:bytes.IndexByte(file, '\n')]), '\n')
	var after uint64
	for {
		page, _, err := svc.Entries(context.Background(), sid, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		from := after
		for _, e := range page.Entries {
			if e.Seq <= from || e.Seq < after {
				t.Fatalf("%s: sequence %d in the page after %d, after %d", sid, e.Seq, from, after)
			}
			out = append(append(out, e.Entry...), '\n')
			after = e.Seq
		}
		if len(page.Entries) < 3 {
			return out
		}
	}
}

func writerFile(w *writer.Writer) []byte {
	var out []byte
	w.View(func(s *tree.Session, _ int) { out = s.AppendJSONL(nil) })
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
