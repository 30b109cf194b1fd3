package jetstream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// TestReapplyErasuresKeepsForks: the erasures a restore applies again
// give each fork by reference of an erased session its path first, as
// pi-node's delete does; the fork then reads whole from its own records.
func TestReapplyErasuresKeepsForks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, log, arch := archiveFixture(t)
	cfg, acfg := log.cfg, arch.cfg

	pid := uuid.Must(uuid.NewV7()).String()
	parent := tree.NewSession(tree.NewHeader(pid, "2026-12-07T10:00:00.000Z", "/w", ""))
	prev := ""
	for i := range 4 {
		e, err := tree.NewMessage(tree.Meta{ID: fmt.Sprintf("e%07d", i), ParentID: prev, Timestamp: "2026-12-07T10:00:00.000Z"}, fmt.Appendf(nil, `{"role":"user","content":"line %d"}`, i))
		if err != nil {
			t.Fatal(err)
		}
		parent.Append(e)
		prev = e.ID
	}
	recs := []session.Record{session.HeaderRecord(&parent.Header)}
	for i := range parent.Len() {
		recs = append(recs, session.RecordOf(parent.Entry(i)))
	}
	seqs, err := log.Append(ctx, pid, 0, recs)
	if err != nil {
		t.Fatal(err)
	}
	ref := writer.ForkRef{Parent: parent.Header, Of: session.ForkOf{Session: pid, EntryID: "e0000002", Seq: seqs[len(seqs)-1], Depth: 1},
		Path: func() (*tree.Session, []uint64) { return parent, seqs[1:] }}
	fid, _, err := writer.ForkByReference(ctx, log, arch, ref, time.Now(), writer.RetryPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	frecs, err := log.Read(ctx, fid, 0)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := session.BuildFrom(ctx, log, frecs)
	if err != nil || want.Len() != 3 {
		t.Fatalf("the fork reads %v entries before: %v", want, err)
	}

	n, err := ReapplyErasures(ctx, conn.JS, Erasing{Stream: cfg.Stream, Bucket: cfg.Bucket, Archive: acfg.Stream}, []wire.Erasure{{Session: pid, At: time.Now(), By: "test"}})
	if err != nil || n != (Reapplied{Erased: 1, Forks: 1}) {
		t.Fatalf("ReapplyErasures: %+v, %v", n, err)
	}
	if _, err := log.Read(ctx, pid, 0); err == nil {
		t.Fatal("the parent is still there")
	}
	if frecs, err = log.Read(ctx, fid, 0); err != nil {
		t.Fatal(err)
	}
	got, _, err := session.Build(frecs) // no reader: its own records only
	if err != nil {
		t.Fatalf("the fork after its parent's erasure: %v", err)
	}
	if g, w := string(got.AppendJSONL(nil)), string(want.AppendJSONL(nil)); g != w {
		t.Fatalf("the fork after its parent's erasure:\n%s\nwant\n%s", g, w)
	}
	if fs, err := arch.Forks(ctx, pid); err != nil || len(fs) != 0 {
		t.Fatalf("the registry keeps %v (%v)", fs, err)
	}
}
