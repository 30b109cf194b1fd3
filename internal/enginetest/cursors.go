package enginetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestCursors checks every clause of the session.Cursors contract. newCursors
// must return an empty store for each call.
func TestCursors(t *testing.T, newCursors func(t *testing.T) session.Cursors) {
	t.Run("GetMissing", func(t *testing.T) { testCursorMissing(t, newCursors(t)) })
	t.Run("PutGet", func(t *testing.T) { testCursorPutGet(t, newCursors(t)) })
	t.Run("UpdateCAS", func(t *testing.T) { testCursorUpdate(t, newCursors(t)) })
	t.Run("Delete", func(t *testing.T) { testCursorDelete(t, newCursors(t)) })
	t.Run("ListOrder", func(t *testing.T) { testCursorList(t, newCursors(t)) })
	t.Run("Watch", func(t *testing.T) { testCursorWatch(t, newCursors(t)) })
	t.Run("InvalidIDs", func(t *testing.T) { testCursorInvalid(t, newCursors(t)) })
}

// cursorAt returns a cursor whose time has nanoseconds and a zone, to check
// that UpdatedAt round-trips exactly.
func cursorAt(leaf string, seq uint64) session.Cursor {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("X", 3600)).Add(time.Duration(seq) * time.Second)
	return session.Cursor{LeafID: leaf, Seq: seq, UpdatedAt: at}
}

func sameCursor(t *testing.T, what string, got session.CursorEntry, sid, client string, rev uint64, want session.Cursor) {
	t.Helper()
	if got.Session != sid || got.Client != client || got.Revision != rev ||
		got.LeafID != want.LeafID || got.Seq != want.Seq || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("%s: got %+v, want %s/%s rev %d %+v", what, got, sid, client, rev, want)
	}
}

func mustPut(t *testing.T, c session.Cursors, sid, client string, cur session.Cursor) uint64 {
	t.Helper()
	rev, err := c.Put(context.Background(), sid, client, cur)
	if err != nil || rev == 0 {
		t.Fatalf("put %s/%s: rev %d, %v", sid, client, rev, err)
	}
	return rev
}

func mustGet(t *testing.T, c session.Cursors, sid, client string) session.CursorEntry {
	t.Helper()
	e, err := c.Get(context.Background(), sid, client)
	if err != nil {
		t.Fatalf("get %s/%s: %v", sid, client, err)
	}
	return e
}

func testCursorMissing(t *testing.T, c session.Cursors) {
	sid := newSessionID(t)
	_, err := c.Get(context.Background(), sid, "alice")
	wantErr(t, "get of a missing cursor", err, wire.ErrNotFound)
	mustPut(t, c, sid, "bob", cursorAt("0000000a", 1))
	_, err = c.Get(context.Background(), sid, "alice")
	wantErr(t, "get of a missing cursor beside another", err, wire.ErrNotFound)
}

func testCursorPutGet(t *testing.T, c session.Cursors) {
	sid := newSessionID(t)
	want := cursorAt("0000000a", 3)
	rev := mustPut(t, c, sid, "alice", want)
	sameCursor(t, "get after put", mustGet(t, c, sid, "alice"), sid, "alice", rev, want)

	null := cursorAt("", 4) // a client before the first entry: leafId null
	rev2 := mustPut(t, c, sid, "alice", null)
	if rev2 <= rev {
		t.Fatalf("second put: revision %d after %d", rev2, rev)
	}
	sameCursor(t, "get after a put of a null leaf", mustGet(t, c, sid, "alice"), sid, "alice", rev2, null)
}

func testCursorUpdate(t *testing.T, c session.Cursors) {
	ctx := context.Background()
	sid := newSessionID(t)
	first := cursorAt("0000000a", 1)
	rev, err := c.Update(ctx, sid, "alice", first, 0)
	if err != nil {
		t.Fatalf("update of a missing cursor with revision 0: %v", err)
	}
	_, err = c.Update(ctx, sid, "alice", cursorAt("0000000b", 2), 0)
	wantErr(t, "update with revision 0 of an existing cursor", err, wire.ErrConflict)

	second := cursorAt("0000000b", 2)
	rev2, err := c.Update(ctx, sid, "alice", second, rev)
	if err != nil || rev2 <= rev {
		t.Fatalf("update with the current revision %d: rev %d, %v", rev, rev2, err)
	}
	_, err = c.Update(ctx, sid, "alice", cursorAt("0000000c", 3), rev)
	wantErr(t, "update with a stale revision", err, wire.ErrConflict)
	_, err = c.Update(ctx, sid, "alice", cursorAt("0000000c", 3), rev2+100)
	wantErr(t, "update with a future revision", err, wire.ErrConflict)
	_, err = c.Update(ctx, sid, "carol", cursorAt("0000000c", 3), rev2)
	wantErr(t, "update of a missing cursor with a revision", err, wire.ErrConflict)
	sameCursor(t, "get after refused updates", mustGet(t, c, sid, "alice"), sid, "alice", rev2, second)
}

func testCursorDelete(t *testing.T, c session.Cursors) {
	ctx := context.Background()
	sid := newSessionID(t)
	mustPut(t, c, sid, "alice", cursorAt("0000000a", 1))
	if err := c.Delete(ctx, sid, "alice"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err := c.Get(ctx, sid, "alice")
	wantErr(t, "get of a deleted cursor", err, wire.ErrNotFound)
	if err := c.Delete(ctx, sid, "alice"); err != nil {
		t.Fatalf("delete of a deleted cursor: %v", err)
	}
	if err := c.Delete(ctx, sid, "nobody"); err != nil {
		t.Fatalf("delete of a missing cursor: %v", err)
	}
	again := cursorAt("0000000b", 2)
	rev, err := c.Update(ctx, sid, "alice", again, 0)
	if err != nil {
		t.Fatalf("update with revision 0 of a deleted cursor: %v", err)
	}
	sameCursor(t, "get after re-creation", mustGet(t, c, sid, "alice"), sid, "alice", rev, again)
}

func testCursorList(t *testing.T, c session.Cursors) {
	ctx := context.Background()
	sid, other := newSessionID(t), newSessionID(t)
	list, err := c.List(ctx, sid)
	if err != nil || len(list) != 0 {
		t.Fatalf("list of a session without cursors: %v, %v", list, err)
	}
	clients := []string{"zed", "alice", "Bob", "mallory", "carol_2", "carol-1"}
	revs := map[string]uint64{}
	curs := map[string]session.Cursor{}
	for i, cl := range clients {
		curs[cl] = cursorAt(fmt.Sprintf("%08x", i+1), uint64(i+1))
		revs[cl] = mustPut(t, c, sid, cl, curs[cl])
	}
	mustPut(t, c, other, "alice", cursorAt("000000ff", 9))
	if err := c.Delete(ctx, sid, "mallory"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	list, err = c.List(ctx, sid)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	want := []string{"Bob", "alice", "carol-1", "carol_2", "zed"} // byte order
	if len(list) != len(want) {
		t.Fatalf("list: got %d cursors %+v, want %v", len(list), list, want)
	}
	for i, e := range list {
		sameCursor(t, fmt.Sprintf("list[%d]", i), e, sid, want[i], revs[want[i]], curs[want[i]])
	}
}

func testCursorInvalid(t *testing.T, c session.Cursors) {
	ctx := context.Background()
	sid := newSessionID(t)
	for _, bad := range []string{"", "a.b", "a*", "a>", "a b", "ä", string(make([]byte, 65))} {
		_, err := c.Get(ctx, sid, bad)
		wantErr(t, fmt.Sprintf("get with client %q", bad), err, wire.ErrInvalid)
		_, err = c.Put(ctx, sid, bad, cursorAt("0000000a", 1))
		wantErr(t, fmt.Sprintf("put with client %q", bad), err, wire.ErrInvalid)
		_, err = c.Update(ctx, sid, bad, cursorAt("0000000a", 1), 0)
		wantErr(t, fmt.Sprintf("update with client %q", bad), err, wire.ErrInvalid)
		wantErr(t, fmt.Sprintf("delete with client %q", bad), c.Delete(ctx, sid, bad), wire.ErrInvalid)
	}
	_, err := c.Put(ctx, "not-a-session", "alice", cursorAt("0000000a", 1))
	wantErr(t, "put with a bad session", err, wire.ErrInvalid)
	_, err = c.List(ctx, "*")
	wantErr(t, "list with a bad session", err, wire.ErrInvalid)
	wantErr(t, "watch with a bad session", c.Watch(ctx, "x.>", func(session.CursorEntry, bool) {}), wire.ErrInvalid)
}

// cursorEvent is one Watch callback.
type cursorEvent struct {
	e       session.CursorEntry
	deleted bool
}

// testCursorWatch checks that Watch reports puts, updates and deletes of its
// session in order, with their revisions, and nothing of other sessions.
// Watch has no "ready" signal, so the test first puts a probe cursor until
// the watcher reports it.
func testCursorWatch(t *testing.T, c session.Cursors) {
	ctx, cancel := context.WithCancel(context.Background())
	sid, other := newSessionID(t), newSessionID(t)
	events := make(chan cursorEvent, 64)
	done := make(chan error, 1)
	go func() {
		done <- c.Watch(ctx, sid, func(e session.CursorEntry, deleted bool) {
			select {
			case events <- cursorEvent{e, deleted}:
			case <-ctx.Done():
			}
		})
	}()
	defer func() {
		cancel()
		<-done
	}()

	next := func() cursorEvent {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case err := <-done:
			t.Fatalf("watch ended early: %v", err)
		case <-time.After(waitTimeout):
			t.Fatalf("watch: no event within %v", waitTimeout)
		}
		return cursorEvent{}
	}
	var probeRev, seen uint64
	testutil.WaitFor(t, waitTimeout, func() error {
		probeRev = mustPut(t, c, sid, "probe", cursorAt("", 0))
		select {
		case ev := <-events:
			seen = ev.e.Revision
			return nil
		case <-time.After(100 * time.Millisecond):
			return errors.New("watch reported no probe yet")
		}
	})
	for seen != probeRev { // skip the reports of earlier probes
		seen = next().e.Revision
	}

	// One change at a time, each awaited before the next: a KV-backed store
	// keeps one revision per key and may coalesce changes of one cursor that
	// follow each other faster than the watcher reads.
	first, second, bob := cursorAt("0000000a", 1), cursorAt("0000000b", 2), cursorAt("0000000c", 3)
	rev1 := mustPut(t, c, sid, "alice", first)
	mustPut(t, c, other, "alice", first)
	revBob := mustPut(t, c, sid, "bob", bob)
	ev := next()
	sameCursor(t, "put", ev.e, sid, "alice", rev1, first)
	ev = next()
	sameCursor(t, "put of another client", ev.e, sid, "bob", revBob, bob)

	rev2, err := c.Update(ctx, sid, "alice", second, rev1)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	ev = next()
	sameCursor(t, "update", ev.e, sid, "alice", rev2, second)
	if ev.deleted {
		t.Fatal("update reported as a delete")
	}
	if err := c.Delete(ctx, sid, "alice"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	ev = next()
	if !ev.deleted || ev.e.Session != sid || ev.e.Client != "alice" || ev.e.Revision <= rev2 {
		t.Fatalf("delete event: %+v deleted=%v, want a delete of alice after revision %d", ev.e, ev.deleted, rev2)
	}
	select {
	case ev := <-events:
		t.Fatalf("unexpected event %+v deleted=%v", ev.e, ev.deleted)
	default:
	}

	cancel()
	select {
	case err := <-done:
		done <- err
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("watch after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("watch did not return within %v of its context's end", waitTimeout)
	}
}
