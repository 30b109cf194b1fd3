package store_test

import (
	"context"
	"testing"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/writer"
)

// afterRead is a Log whose Read runs then once it has read the records:
// a write acknowledged (through this node) while the read's reply is on
// its way.
type afterRead struct {
	session.Log
	then func()
}

func (l afterRead) Read(ctx context.Context, sid string, afterSeq uint64) ([]session.Stored, error) {
	recs, err := l.Log.Read(ctx, sid, afterSeq)
	if l.then != nil {
		l.then()
	}
	return recs, err
}

// TestUnheldReadFreshnessDescribesTheBody: the Pi-Applied-Seq of a read of a
// shard held elsewhere (read from the log) is what the body reflects, not
// what the node learned of the log's end after reading it. The Jepsen
// suite over 4 shards saw a read answer Pi-Applied-Seq 901 without the
// entry at 901, which the node acknowledged while the read was reading
// the session from the log.
func TestUnheldReadFreshnessDescribesTheBody(t *testing.T) {
	ctx := context.Background()
	l := session.NewMemLog(1000, 1<<20)
	w, err := writer.Create(l, writer.CreateOptions{Cwd: "/mark"}, writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range [][]byte{enginetest.UserMessage("q"), enginetest.AssistantMessage("a")} {
		if _, err := w.AppendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if !w.Flushed() {
		t.Fatal("the session is not in the log yet")
	}
	st := store.Unheld(l)
	var acked uint64
	log := afterRead{Log: l, then: func() {
		if _, err := w.AppendMessage(ctx, enginetest.UserMessage("q2")); err != nil {
			t.Error(err)
		}
		acked = w.LastSeq()
		st.NoteLogSeq(acked) // as noteAck does for a write this node acknowledged
	}}
	var last uint64
	f, err := st.ViewOrRead(ctx, log, w.ID(), func(d *store.Doc) error { last = d.LastSeq; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if f.Applied > last {
		t.Fatalf("the read reports Pi-Applied-Seq %d, yet its body ends at %d: the entry at %d (acknowledged while it read) is missing", f.Applied, last, acked)
	}
}
