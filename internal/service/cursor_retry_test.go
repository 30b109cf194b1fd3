package service_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// flakyCursors fails its first n Puts with err, as a bucket without a
// leader (an election) answers.
type flakyCursors struct {
	session.Cursors
	n    atomic.Int32
	err  error
	puts atomic.Int32
}

func (f *flakyCursors) Put(ctx context.Context, sid, client string, c session.Cursor) (uint64, error) {
	f.puts.Add(1)
	if f.n.Add(-1) >= 0 {
		return 0, f.err
	}
	return f.Cursors.Put(ctx, sid, client, c)
}

// An append naming a client moves its cursor although the bucket is
// unavailable for a moment (asked again); another error fails at once,
// saying the entries were stored.
func TestAppendCursorRetry(t *testing.T) {
	ctx := ctxT(t)
	b := memBackend(t)
	unavailable := &flakyCursors{Cursors: b.cursors, err: fmt.Errorf("put cursor: %w", wire.ErrUnavailable)}
	unavailable.n.Store(3)
	svc := &service.Service{Log: b.log, Store: openStore(t, b), Cursors: unavailable}
	created, err := svc.Create(ctx, wire.CreateRequest{Header: []byte(`{"cwd":"/w"}`), Entries: raws(`{"type":"message","message":{"role":"user","content":"q"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Append(ctx, created.SessionID, wire.AppendRequest{Client: "w1", Entries: raws(`{"type":"message","message":{"role":"user","content":"again"}}`)})
	if err != nil || res.Cursor == nil || res.Cursor.LeafID == nil || *res.Cursor.LeafID != res.Entries[0].ID {
		t.Fatalf("append with the bucket unavailable 3 times: %+v %v", res.Cursor, err)
	}
	if n := unavailable.puts.Load(); n != 4 {
		t.Errorf("%d puts, want 4", n)
	}

	broken := &flakyCursors{Cursors: b.cursors, err: errors.New("disk on fire")}
	broken.n.Store(1000)
	svc.Cursors = broken
	_, err = svc.Append(ctx, created.SessionID, wire.AppendRequest{Client: "w1", Entries: raws(`{"type":"message","message":{"role":"user","content":"third"}}`)})
	if err == nil || !strings.Contains(err.Error(), "entries stored") || broken.puts.Load() != 1 {
		t.Fatalf("append with a broken bucket: %v after %d puts, want one put and an error saying the entries were stored", err, broken.puts.Load())
	}
}
