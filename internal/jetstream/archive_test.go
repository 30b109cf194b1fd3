package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// archiveFixture is a log and its archive on a fresh stream pair.
func archiveFixture(t *testing.T) (*Conn, *Log, *Archive) {
	t.Helper()
	conn := connect(t, runServer(t).ClientURL())
	cfg := testConfig(1)
	provision(t, conn.JS, cfg)
	log := NewLog(conn.JS, cfg)
	acfg := NewArchiveConfig(cfg)
	acfg.SetStream(cfg.Stream + "_ARCHIVE")
	a := NewArchive(log, acfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	return conn, log, a
}

// writeSession appends a header and n entries as one batch; it returns the
// last sequence.
func writeSession(t *testing.T, l *Log, sid string, n int) uint64 {
	t.Helper()
	recs := []session.Record{{Type: "session", Data: []byte(`{"type":"session","version":3,"id":"` + sid + `","timestamp":"2026-11-30T08:51:24.626Z","cwd":"/p"}`)}}
	parent := ""
	for i := range n {
		id := fmt.Sprintf("e%07d", i)
		pj := "null"
		if parent != "" {
			pj = `"` + parent + `"`
		}
		recs = append(recs, session.Record{Type: "message", ID: id, Parent: parent,
			Data: []byte(`{"type":"message","id":"` + id + `","parentId":` + pj + `,"timestamp":"2026-11-30T08:51:25.000Z","message":{"role":"user","content":"hi"}}`)})
		parent = id
	}
	seqs, err := l.Append(context.Background(), sid, 0, recs)
	if err != nil {
		t.Fatal(err)
	}
	return seqs[len(seqs)-1]
}

// lastNotice reads the newest purge notice from the log.
func lastNotice(t *testing.T, l *Log) (session.PurgeNotice, *storedMsg) {
	t.Helper()
	m, err := leaderGet(context.Background(), l.js, l.api, l.cfg.Stream, msgGetRequest{LastFor: l.subject(session.PurgeToken)})
	if err != nil {
		t.Fatalf("no purge notice: %v", err)
	}
	var n session.PurgeNotice
	if err := json.Unmarshal(m.Data, &n); err != nil {
		t.Fatal(err)
	}
	return n, m
}

func TestArchivePurgeUpTo(t *testing.T) {
	conn, l, a := archiveFixture(t)
	ctx := context.Background()
	sid := uuid.Must(uuid.NewV7()).String()
	last := writeSession(t, l, sid, 2)
	cursors, err := NewCursors(ctx, conn.JS, l.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cursors.Put(ctx, sid, "agent", session.Cursor{Seq: last, UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}

	// Records after upTo: refused, nothing purged.
	_, err = a.PurgeUpTo(ctx, sid, last-1)
	var ce *wire.ConflictError
	if !errors.As(err, &ce) || ce.LastSeq != last {
		t.Fatalf("purge up to %d of a session ending at %d: %v", last-1, last, err)
	}
	if recs, err := l.Read(ctx, sid, 0); err != nil || len(recs) != 3 {
		t.Fatalf("after a refused purge: %d records, %v", len(recs), err)
	}

	remaining, err := a.PurgeUpTo(ctx, sid, last)
	if err != nil || remaining != 0 {
		t.Fatalf("purge: %d, %v", remaining, err)
	}
	if _, err := l.Read(ctx, sid, 0); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("records left: %v", err)
	}
	if cs, err := cursors.List(ctx, sid); err != nil || len(cs) != 0 {
		t.Errorf("cursors left: %d, %v", len(cs), err)
	}
	n, m := lastNotice(t, l)
	if n.Session != sid || n.UpTo != last || m.Header.Get(jetstream.MsgIDHeader) != fmt.Sprintf("_purge/%s/%d", sid, last) ||
		m.Header.Get(hdrType) != "purge" || m.Header.Get(hdrID) != sid {
		t.Errorf("notice %+v, headers %v", n, m.Header)
	}

	// Again, as a pass that died after its purge would: only the notice,
	// a duplicate of the first.
	end, _ := l.LastSeq(ctx)
	if remaining, err := a.PurgeUpTo(ctx, sid, last); err != nil || remaining != 0 {
		t.Fatalf("repeated purge: %d, %v", remaining, err)
	}
	if again, _ := l.LastSeq(ctx); again != end {
		t.Errorf("the repeated purge wrote %d messages", again-end)
	}
	if _, err := a.LastSeq(ctx, sid); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("last seq of a purged session: %v", err)
	}
}

func TestArchiveCopies(t *testing.T) {
	_, _, a := archiveFixture(t)
	ctx := context.Background()
	name := "naïve 🚀 session"
	v4 := uuid.New().String() // pi's own ids: the month comes from the header
	created := time.Date(2025, 3, 9, 10, 0, 0, 0, time.UTC)
	c := wire.ArchiveCopy{Info: wire.Info{SessionID: v4, Name: &name, Cwd: "/home/dév", Created: created, LastSeq: 7, EntryCount: 2},
		Month: session.ArchiveMonth(v4, created)}
	data := []byte("{\"type\":\"session\"}\n{\"type\":\"message\"}\n")
	if err := a.Put(ctx, c, data); err != nil {
		t.Fatal(err)
	}
	found, err := a.Find(ctx, v4)
	if err != nil || len(found) != 1 {
		t.Fatalf("find: %v, %d copies", err, len(found))
	}
	got := found[0]
	if got.Month != "202503" || *got.Name != name || got.Cwd != "/home/dév" || got.LastSeq != 7 || got.Bytes != int64(len(data)) || got.Parts != 1 {
		t.Errorf("found %+v", got)
	}
	if body, err := a.Fetch(ctx, got); err != nil || string(body) != string(data) {
		t.Errorf("fetch: %q, %v", body, err)
	}
	if list, next, err := a.List(ctx, "202503", 0, 10); err != nil || next != 0 || len(list) != 1 {
		t.Errorf("list of the month: %v %d %+v", err, next, list)
	}
	if err := a.Delete(ctx, found); err != nil {
		t.Fatal(err)
	}
	if found, err := a.Find(ctx, v4); err != nil || len(found) != 0 {
		t.Errorf("after delete: %v, %d copies", err, len(found))
	}
	if err := a.Delete(ctx, []wire.ArchiveCopy{got}); err != nil {
		t.Errorf("deleting a deleted copy: %v", err)
	}
}

func TestArchiveProvision(t *testing.T) {
	conn, l, a := archiveFixture(t)
	ctx := context.Background()
	s, err := conn.JS.Stream(ctx, a.cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	if cfg.Compression != jetstream.S2Compression || !cfg.AllowAtomicPublish || cfg.Subjects[0] != a.cfg.SubjectPrefix+".*.*" {
		t.Errorf("archive stream %+v", cfg)
	}
	if err := a.Provision(ctx); err != nil {
		t.Errorf("provision again: %v", err)
	}
	// A deployment that never archived has no archive: lists say so.
	other := testConfig(1)
	acfg := NewArchiveConfig(other)
	acfg.SetStream(other.Stream + "_ARCHIVE")
	_, _, err = NewArchive(l, acfg).List(ctx, "", 0, 10)
	if !errors.Is(err, wire.ErrNotFound) || !strings.Contains(err.Error(), "no archive") {
		t.Errorf("list without an archive: %v", err)
	}
	// An existing stream of that name with other subjects is refused.
	bad := acfg
	bad.SetStream(other.Stream + "_BAD")
	if _, err := conn.JS.CreateStream(ctx, jetstream.StreamConfig{Name: bad.Stream, Subjects: []string{"elsewhere.>"}}); err != nil {
		t.Fatal(err)
	}
	if err := NewArchive(l, bad).Provision(ctx); err == nil || !strings.Contains(err.Error(), "subjects") {
		t.Errorf("provision over an incompatible stream: %v", err)
	}
}
