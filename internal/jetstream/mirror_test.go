package jetstream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// The cross-region operations on one server: mirrors, promotion, fencing,
// scans and a mirror recreated the other way round. (internal/region runs
// them across a supercluster.)
func TestMirrorPromoteFenceRecreate(t *testing.T) {
	s := runServer(t)
	c := connect(t, s.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	home, mirror := testConfig(1), testConfig(1)
	provision(t, c.JS, home)
	if err := ProvisionMirror(ctx, c.JS, mirror, home, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.JS.DeleteStream(context.Background(), mirror.Stream)
		_ = c.JS.DeleteStream(context.Background(), bucketStream(mirror.Bucket))
	})
	const sid = "0190b6a4-7c1f-7cc3-9d32-6c5e2f1d0c01"
	hl := NewLog(c.JS, home)
	appendN(t, hl, sid, 0, 3)
	cur, err := NewCursors(ctx, c.JS, home)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cur.Put(ctx, sid, "c1", session.Cursor{LeafID: "e2", Seq: 3}); err != nil {
		t.Fatal(err)
	}
	if err := WaitMirror(ctx, c.JS, mirror.Stream, 3); err != nil {
		t.Fatal(err)
	}
	// The cursor too (the bucket's first message), or the promotion below
	// may take place before it is mirrored: a cursor's RPO, not a bug.
	if err := WaitMirror(ctx, c.JS, bucketStream(mirror.Bucket), 1); err != nil {
		t.Fatal(err)
	}

	// The mirror holds the home's records at the home's sequences, on its
	// own subjects, and reports the home's last sequence.
	ml := NewMirrorLog(c.JS, mirror)
	var seqs []uint64
	last, err := ml.Scan(ctx, 0, func(recs []session.Stored) error {
		for _, r := range recs {
			if r.Session != sid {
				return fmt.Errorf("record %d of session %q", r.Seq, r.Session)
			}
			seqs = append(seqs, r.Seq)
		}
		return nil
	})
	if err != nil || last != 3 || fmt.Sprint(seqs) != "[1 2 3]" {
		t.Fatalf("scan of the mirror: %v, last %d, %v", seqs, last, err)
	}
	if n, err := ml.LastSeq(ctx); err != nil || n != 3 {
		t.Fatalf("mirror's last seq %d %v", n, err)
	}
	st, err := Probe(ctx, c.JS, mirror.Stream)
	if err != nil || !st.Reachable || st.MirrorOf != home.Stream {
		t.Fatalf("probe %+v %v", st, err)
	}

	// Fenced, the home refuses writes as unavailable: a writer retries,
	// and the retry goes to the new home.
	if err := Fence(ctx, c.JS, home); err != nil {
		t.Fatal(err)
	}
	if _, err := hl.Append(ctx, sid, 3, []session.Record{rec("late", "e2")}); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("append to a fenced home: %v", err)
	}
	if err := Promote(ctx, c.JS, mirror, ""); err != nil {
		t.Fatal(err)
	}
	if st, _ := Probe(ctx, c.JS, mirror.Stream); st.MirrorOf != "" || len(st.Subjects) != 1 {
		t.Fatalf("promoted: %+v", st)
	}
	seq := appendN(t, NewLog(c.JS, mirror), sid, 3, 1)
	if seq != 4 {
		t.Fatalf("first write to the promoted stream at %d, want 4", seq)
	}
	mc, err := NewCursors(ctx, c.JS, mirror)
	if err != nil {
		t.Fatal(err)
	}
	all, err := mc.All(ctx)
	if err != nil || len(all) != 1 || all[0].LeafID != "e2" {
		t.Fatalf("cursors of the promoted bucket: %+v %v", all, err)
	}

	// The old home becomes a mirror of the new one.
	if err := RecreateMirror(ctx, c.JS, home, mirror, ""); err != nil {
		t.Fatal(err)
	}
	if err := WaitMirror(ctx, c.JS, home.Stream, 4); err != nil {
		t.Fatal(err)
	}
	if st, _ := Probe(ctx, c.JS, home.Stream); st.MirrorOf != mirror.Stream || st.Sealed {
		t.Fatalf("recreated: %+v", st)
	}
}

func rec(id, parent string) session.Record {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return session.Record{Type: "message", ID: id, Parent: parent,
		Data: fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-11-30T10:00:00.000Z","message":{"role":"user","content":"x"}}`, id, p)}
}

// appendN appends n chained entries after last (0: with the header first)
// and returns the last sequence.
func appendN(t *testing.T, l *Log, sid string, last uint64, n int) uint64 {
	t.Helper()
	var recs []session.Record
	if last == 0 {
		recs = append(recs, session.Record{Type: "session",
			Data: fmt.Appendf(nil, `{"type":"session","version":3,"id":%q,"timestamp":"2026-11-30T10:00:00.000Z","cwd":"/w"}`, sid)})
		n--
	}
	for i := range n {
		parent := ""
		if i > 0 || last > 0 {
			parent = fmt.Sprintf("e%d", last+uint64(i))
		}
		recs = append(recs, rec(fmt.Sprintf("e%d", last+uint64(i)+1), parent))
	}
	seqs, err := l.Append(context.Background(), sid, last, recs)
	if err != nil {
		t.Fatal(err)
	}
	return seqs[len(seqs)-1]
}

// A mirror's lag counts what its origin holds and it lacks: from the
// origin's state when it answers (a new mirror reports 0 before its first
// messages), from its own report when only that is known, else unknown.
func TestMirrorPositionLag(t *testing.T) {
	for _, c := range []struct {
		name     string
		p        MirrorPosition
		lag      uint64
		known    bool
		from     string
		caughtUp bool
	}{
		{"new mirror, origin ahead", MirrorPosition{LastSeq: 0, OriginLastSeq: 2, OriginAnswered: true, Reported: true}, 2, true, "origin", false},
		{"caught up", MirrorPosition{LastSeq: 5, OriginLastSeq: 5, OriginAnswered: true, Reported: true, Receiving: true}, 0, true, "origin", true},
		{"level, not seen receiving", MirrorPosition{LastSeq: 5, OriginLastSeq: 5, OriginAnswered: true, Reported: true}, 0, true, "origin", false},
		{"origin asked later, ahead by then", MirrorPosition{LastSeq: 5, OriginLastSeq: 7, OriginAnswered: true, Reported: true, Receiving: true}, 2, true, "origin", false},
		{"origin away, the mirror's report", MirrorPosition{LastSeq: 5, Reported: true, ReportedLag: 3}, 3, true, "mirror", false},
		{"origin away, mirror never heard from it", MirrorPosition{LastSeq: 5}, 0, false, "unknown", false},
		{"both empty, mirror not receiving yet", MirrorPosition{OriginAnswered: true, Reported: true}, 0, true, "origin", false},
		{"both empty, mirror receiving", MirrorPosition{OriginAnswered: true, Reported: true, Receiving: true}, 0, true, "origin", true},
	} {
		lag, known := c.p.Lag()
		if lag != c.lag || known != c.known || c.p.LagSource() != c.from || c.p.CaughtUp() != c.caughtUp {
			t.Errorf("%s: lag %d %v from %s, caught up %v; want %d %v from %s, %v", c.name, lag, known, c.p.LagSource(), c.p.CaughtUp(), c.lag, c.known, c.from, c.caughtUp)
		}
	}
}

// A mirror counts as receiving only once its last contact has moved on
// from the first one seen: the setting up of its consumer is a contact
// too, and may be followed by nothing.
func TestMirrorReceivingNeedsARenewedContact(t *testing.T) {
	m := &MirrorLog{}
	for i, c := range []struct {
		active time.Duration
		want   bool
	}{
		{-1, false},              // never heard from its origin
		{2 * time.Second, false}, // the first contact seen: its consumer set up
		{2*time.Second + 500*time.Millisecond, false}, // the same contact, seen later
		{1900 * time.Millisecond, false},              // within the estimate's jitter
		{0, true},                                     // a heartbeat or a message: it receives
		{5 * time.Second, true},                       // and it did: that stays known
	} {
		if got := m.renewed(c.active); got != c.want {
			t.Errorf("step %d, active %v: receiving %v, want %v", i, c.active, got, c.want)
		}
	}
}
