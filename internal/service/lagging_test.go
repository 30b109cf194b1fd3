package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// laggingFeed delivers the log up to a sequence and nothing after it: a
// node whose Store has not applied what another node wrote a moment ago.
type laggingFeed struct {
	*session.MemLog
	upTo uint64
}

func (f laggingFeed) Follow(ctx context.Context, from uint64, apply func([]session.Stored) error) error {
	return f.MemLog.Follow(ctx, from, func(recs []session.Stored) error {
		var kept []session.Stored
		for _, r := range recs {
			if r.Seq <= f.upTo {
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 {
			return nil
		}
		return apply(kept)
	})
}

// TestRetryOnLaggingNode: a client re-sends an append whose ack it lost,
// with expectLastSeq, to a node whose Store has seen neither the entry nor
// its parent. The node finds both in the log and answers with the original
// result; the result's lastSeq covers the entry (read-your-writes with
// minSeq=lastSeq must find it on any node), and so does the cursor's seq.
func TestRetryOnLaggingNode(t *testing.T) {
	ctx := ctxT(t)
	l := session.NewMemLog(1000, 8<<20)
	cursors := session.NewMemCursors()
	sid := testutil.SessionID(t)
	writerSvc := &service.Service{Log: l, Store: openStore(t, backend{log: l, feed: l, cursors: cursors}), Cursors: cursors}
	created, err := writerSvc.Create(ctx, wire.CreateRequest{
		Header:  json.RawMessage(`{"id":"` + sid + `"}`),
		Entries: raws(`{"type":"message","id":"00000001","message":{"role":"user","content":"q"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := writerSvc.Append(ctx, sid, wire.AppendRequest{Entries: raws(`{"type":"message","id":"0000000p","message":{"role":"assistant","content":[],"provider":"x","model":"y"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	a := `{"type":"message","id":"0000000a","parentId":"0000000p","timestamp":"2026-12-01T10:00:00.000Z","message":{"role":"user","content":"again"}}`
	first, err := writerSvc.Append(ctx, sid, wire.AppendRequest{Entries: raws(a), ExpectLastSeq: &p.LastSeq})
	if err != nil {
		t.Fatal(err)
	}

	lagging := store.New(laggingFeed{l, created.LastSeq}, store.Options{Log: l})
	if err := lagging.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lagging.Close() })
	waitApplied(t, lagging, created.LastSeq)
	other := &service.Service{Log: l, Store: lagging, Cursors: cursors}
	again, err := other.Append(ctx, sid, wire.AppendRequest{Entries: raws(a), ExpectLastSeq: &p.LastSeq, Client: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Entries) != 1 || again.Entries[0] != first.Entries[0] {
		t.Fatalf("retry returned %+v, want the original %+v", again.Entries, first.Entries)
	}
	if again.LastSeq < again.Entries[0].Seq {
		t.Errorf("retry's lastSeq %d is below its own entry's seq %d", again.LastSeq, again.Entries[0].Seq)
	}
	c, err := cursors.Get(ctx, sid, "c1")
	if err != nil || c.LeafID != "0000000a" || c.Seq < first.Entries[0].Seq {
		t.Errorf("cursor %+v (%v), want leaf 0000000a at seq ≥ %d", c, err, first.Entries[0].Seq)
	}
}

// TestReadsStayOnReadLog: a session this node's Store has not applied is
// read from ReadLog (in a mirror region, the region's own copy), never from
// Log (the home's stream, where writes go): a copy that lacks the session
// answers not found, as the node's own copy would.
func TestReadsStayOnReadLog(t *testing.T) {
	ctx := ctxT(t)
	home, mirror := session.NewMemLog(1000, 8<<20), session.NewMemLog(1000, 8<<20)
	sid := testutil.SessionID(t)
	writer := &service.Service{Log: home}
	if _, err := writer.Create(ctx, wire.CreateRequest{Header: json.RawMessage(`{"id":"` + sid + `"}`), Entries: raws(`{"type":"message","id":"root","message":{"role":"user","content":"q"}}`)}); err != nil {
		t.Fatal(err)
	}
	st := store.New(mirror, store.Options{Log: mirror})
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	reader := &service.Service{Log: home, ReadLog: mirror, Store: st}
	if _, _, err := reader.Get(ctx, sid, false); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("read of a session only the home holds: %v, want not found", err)
	}
	// Without a ReadLog, reads fall back to Log, as in one region.
	reader.ReadLog = nil
	if d, _, err := reader.Get(ctx, sid, false); err != nil || d.Info.SessionID != sid {
		t.Fatalf("read through Log: %+v %v", d.Info, err)
	}
}
