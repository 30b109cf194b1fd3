package service_test

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/seal"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// testSnapshotSealed: with Options.Seal no file the Store writes holds a
// session's text or id — snapshot, spill blocks — and a plain snapshot left
// from before encryption was turned on is removed; a restart with the key,
// or with a new key and this one as the previous (a rotation), serves every
// session from disk; without the key the snapshot is not read and the Store
// rebuilds from the log.
func testSnapshotSealed(t *testing.T, b backend) {
	ctx := ctxT(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(17, 18))
	files := make([][]byte, 40)
	total := 0
	for k := range files {
		files[k] = genSession(t, r, 10)
		total += len(files[k])
	}
	last := importAll(t, b.log, files)
	marker := "MARKER-7f3c9e1a"
	svc := &service.Service{Log: b.log, Store: openStore(t, b), Cursors: b.cursors}
	for _, f := range files {
		res, err := svc.Append(ctx, sessionIDOf(f), wire.AppendRequest{Entries: raws(`{"type":"custom","customType":"note","data":{"text":"` + marker + `"}}`)})
		if err != nil {
			t.Fatal(err)
		}
		last = res.LastSeq
	}
	needles := []string{marker, sessionIDOf(files[0]), sessionIDOf(files[len(files)-1])}
	want := map[string][]byte{}
	plain := openSnapStore(t, b, b.log, dir, 0)
	waitApplied(t, plain, last)
	for _, f := range files {
		want[sessionIDOf(f)] = exportOf(t, plain, sessionIDOf(f))
	}
	if err := plain.Close(); err != nil { // a plain snapshot: as before encryption was on
		t.Fatal(err)
	}
	if len(testutil.FilesHolding(t, []string{dir}, marker)) == 0 {
		t.Fatal("the plain snapshot does not hold the marker: this test could not fail")
	}

	keyA, keyB := []byte(strings.Repeat("a", 32)), []byte(strings.Repeat("b", 40))
	ringA, _ := seal.NewRing(seal.UseStore, keyA)
	cl := &countingLog{Log: b.log}
	open := func(ring *seal.Ring, budget int64) *store.Store {
		t.Helper()
		return openSealedStore(t, b, cl, dir, budget, ring)
	}
	// same requires st to export every session as want has it.
	same := func(st *store.Store, when string) {
		t.Helper()
		for id, w := range want {
			if got := exportOf(t, st, id); !bytes.Equal(got, w) {
				t.Fatalf("session %s differs %s", id, when)
			}
		}
	}
	st := open(ringA, int64(total/4))
	if found := testutil.FilesHolding(t, []string{dir}, needles...); len(found) != 0 {
		t.Fatalf("with encryption on, after Open: %v (the plain snapshot must be gone)", found)
	}
	waitApplied(t, st, last)
	same(st, "with key A (loading and evicting: spill blocks)")
	if spills, _ := filepath.Glob(filepath.Join(dir, "spill-*.blk")); len(spills) == 0 || st.Stats().Evictions == 0 {
		t.Fatalf("no spill block to check (%v, %+v)", spills, st.Stats())
	}
	if found := testutil.FilesHolding(t, []string{dir}, needles...); len(found) != 0 {
		t.Fatalf("with encryption on, spilled: %v", found)
	}
	same(st, "after a reload from a sealed spill block")
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if found := testutil.FilesHolding(t, []string{dir}, needles...); len(found) != 0 {
		t.Fatalf("with encryption on, snapshot written: %v", found)
	}

	// Rotation: key B seals, A still opens; every session from disk.
	ringBA, _ := seal.NewRing(seal.UseStore, keyB, keyA)
	before := cl.reads.Load()
	st = open(ringBA, 0)
	same(st, "after a restart with keys B and A")
	if n := cl.reads.Load() - before; n != 0 {
		t.Fatalf("restarted with keys B and A, the Store read the log %d times: the snapshot was not used", n)
	}
	res, err := svc.Append(ctx, sessionIDOf(files[0]), wire.AppendRequest{Entries: raws(`{"type":"custom","customType":"after-rotation"}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, st, res.LastSeq)
	want[sessionIDOf(files[0])] = exportOf(t, st, sessionIDOf(files[0]))
	if err := st.Close(); err != nil { // a snapshot sealed with B
		t.Fatal(err)
	}
	ringB, _ := seal.NewRing(seal.UseStore, keyB)
	before = cl.reads.Load()
	st = open(ringB, 0)
	same(st, "with key B alone")
	if n := cl.reads.Load() - before; n != 0 {
		t.Fatalf("with key B alone, the Store read the log %d times: the snapshot written after the rotation was not used", n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// Without the key: the snapshot is unreadable, the log is the truth.
	st = open(nil, 0)
	defer st.Close()
	waitApplied(t, st, res.LastSeq)
	same(st, "without the key (rebuilt from the log)")
}
