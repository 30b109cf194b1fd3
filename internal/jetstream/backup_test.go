package jetstream

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestSnapshotRestore: a session stream snapshotted on one server and
// restored on a 3-node cluster (with three replicas instead of one) reads
// back record for record at the same sequences, and accepts the next
// append at the sequence after; a second restore of the same stream is
// refused as existing; a snapshot of a missing stream is not found.
func TestSnapshotRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster takes seconds to elect its leaders")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := connect(t, runServer(t).ClientURL())
	cfg := testConfig(1)
	provision(t, src.JS, cfg)
	l := NewLog(src.JS, cfg)
	var sids []string
	for i := range 5 {
		sid := testutil.SessionID(t)
		recs := append([]session.Record{headerRec(sid)}, entryRecs("c"+string(rune('a'+i)), 40*(i+1))...)
		for off := 0; off < len(recs); off += 50 {
			last := uint64(0)
			if off > 0 {
				got, err := l.Read(ctx, sid, 0)
				if err != nil {
					t.Fatal(err)
				}
				last = got[len(got)-1].Seq
			}
			if _, err := l.Append(ctx, sid, last, recs[off:min(off+50, len(recs))]); err != nil {
				t.Fatal(err)
			}
		}
		sids = append(sids, sid)
	}
	if err := l.Purge(ctx, sids[4]); err != nil { // a gap and a purge notice, kept as they are
		t.Fatal(err)
	}

	var buf bytes.Buffer
	var reported int64
	snap, err := SnapshotStream(ctx, src.JS, cfg.Stream, &buf, func(n int64) { reported = n })
	if err != nil {
		t.Fatal(err)
	}
	st, err := snap.StateOf()
	if err != nil || st.Messages == 0 || st.LastSeq == 0 || reported != int64(buf.Len()) || buf.Len() == 0 {
		t.Fatalf("snapshot: state %+v (%v), %d bytes, progress said %d", st, err, buf.Len(), reported)
	}
	if _, err := SnapshotStream(ctx, src.JS, "NO_SUCH_STREAM", &bytes.Buffer{}, nil); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("snapshot of a missing stream: %v", err)
	}

	servers := runCluster(t, 3)
	dst := connect(t, servers[0].ClientURL(), servers[1].ClientURL(), servers[2].ClientURL())
	r3, err := snap.WithReplicas(3)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RestoreStream(ctx, dst.JS, cfg.Stream, r3, bytes.NewReader(buf.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Messages != st.Messages || got.LastSeq != st.LastSeq || got.FirstSeq != st.FirstSeq {
		t.Fatalf("restored state %+v, snapshot's %+v", got, st)
	}
	t.Cleanup(func() { _ = dst.JS.DeleteStream(context.Background(), cfg.Stream) })
	info, err := dst.JS.Stream(ctx, cfg.Stream)
	if err != nil || info.CachedInfo().Config.Replicas != 3 {
		t.Fatalf("restored stream: %v", err)
	}
	// A restored stream is a new stream to its readers: its creation
	// time, which Log.Identity names, is the restore's, so a Store's
	// snapshot of the stream it replaces is never taken for its own.
	srcInfo, err := src.JS.Stream(ctx, cfg.Stream)
	if err != nil || !info.CachedInfo().Created.After(srcInfo.CachedInfo().Created) {
		t.Fatalf("the restored stream was created %v, the one backed up %v (%v)", info.CachedInfo().Created, srcInfo.CachedInfo().Created, err)
	}
	restored := NewLog(dst.JS, cfg)
	for _, sid := range sids[:4] {
		want, err := l.Read(ctx, sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		have, err := restored.Read(ctx, sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(have) != len(want) {
			t.Fatalf("%s: %d records restored, %d backed up", sid, len(have), len(want))
		}
		for i := range want {
			if have[i].Seq != want[i].Seq || have[i].ID != want[i].ID || !bytes.Equal(have[i].Data, want[i].Data) || !have[i].Time.Equal(want[i].Time) {
				t.Fatalf("%s record %d: restored %+v, backed up %+v", sid, i, have[i], want[i])
			}
		}
		if _, err := restored.Append(ctx, sid, want[len(want)-1].Seq, entryRecs("zz"+sid[:4], 1)); err != nil {
			t.Fatalf("append to a restored session: %v", err)
		}
	}
	if _, err := restored.Read(ctx, sids[4], 0); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("the purged session after the restore: %v", err)
	}
	if _, err := RestoreStream(ctx, dst.JS, cfg.Stream, r3, bytes.NewReader(buf.Bytes()), nil); !errors.Is(err, wire.ErrExists) {
		t.Fatalf("a second restore: %v, want ErrExists", err)
	}
}
