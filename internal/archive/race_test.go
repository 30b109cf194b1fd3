package archive_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/archive"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// racingBackend lets a write land at the worst moment of the first purge:
// race runs instead of it, as a writer and the archiver would interleave.
type racingBackend struct {
	session.Archive
	once sync.Once
	race func(ctx context.Context, sid string, upTo uint64) (uint64, error)
}

func (b *racingBackend) PurgeUpTo(ctx context.Context, sid string, upTo uint64) (uint64, error) {
	fired := false
	var last uint64
	var err error
	b.once.Do(func() { fired = true; last, err = b.race(ctx, sid, upTo) })
	if fired {
		return last, err
	}
	return b.Archive.PurgeUpTo(ctx, sid, upTo)
}

// An append that lands between the purge's check and the purge itself
// leaves entries without their header in the log. The archiver notices,
// archives them with the session and completes the purge: nothing
// acknowledged is lost, no Store (not even one rebuilt from the log) sees a
// broken session, and the restore has the late entry.
func TestAppendDuringPurgeIsArchivedWithTheSession(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	other := f.newStore()
	s := f.create(2)
	var want string
	rb := &racingBackend{Archive: f.arch, race: func(ctx context.Context, sid string, upTo uint64) (uint64, error) {
		late := f.appendOne(sid, "the late question")
		want = f.export(f.store, sid)
		stream, err := f.conn.JS.Stream(ctx, f.cfg.Stream)
		if err != nil {
			return 0, err
		}
		// What the real purge does: up to upTo, keeping what came later.
		err = stream.Purge(ctx, natsjs.WithPurgeSubject(f.cfg.SubjectPrefix+"."+sid), natsjs.WithPurgeSequence(upTo+1))
		return late.LastSeq, err
	}}
	a := archive.New(f.store, f.log, rb, archive.Options{Node: "n1", Now: f.clock.Now})
	out, n, err := a.Archive(ctx, s.SessionID, time.Now().Add(time.Hour))
	if err != nil || out != archive.Repaired || n != int64(len(want)) {
		t.Fatalf("archive: %v, %d bytes, %v; want repaired, %d bytes", out, n, err, len(want))
	}
	f.wait(other, f.logEnd())
	if other.Has(s.SessionID) {
		t.Error("the other Store kept the session")
	}
	if _, err := f.log.Read(ctx, s.SessionID, 0); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("records left in the log: %v", err)
	}
	rebuilt := f.newStore()
	f.wait(rebuilt, f.logEnd())
	if st := rebuilt.Stats(); st.SkippedRecs != 0 || rebuilt.Has(s.SessionID) {
		t.Errorf("a Store rebuilt from the log: %d records skipped, has the session %v", st.SkippedRecs, rebuilt.Has(s.SessionID))
	}
	f.clock.advance(time.Hour)
	res := f.restore(s.SessionID)
	f.wait(f.store, res.LastSeq)
	if got := f.export(f.store, s.SessionID); got != want {
		t.Errorf("restored:\n%s\nwant (with the late entry):\n%s", got, want)
	}
}

// A second write that lands while a torn session is being repaired (after
// the repair read the log) is added too: the prefix is gone already, so
// the session cannot stay, and nothing acknowledged may be lost.
func TestWriteDuringRepairIsArchivedToo(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.create(1)
	calls := 0
	var want string
	rb := &racingBackend{Archive: f.arch}
	rb.race = func(ctx context.Context, sid string, upTo uint64) (uint64, error) {
		calls++
		late := f.appendOne(sid, "first late question")
		stream, err := f.conn.JS.Stream(ctx, f.cfg.Stream)
		if err != nil {
			return 0, err
		}
		err = stream.Purge(ctx, natsjs.WithPurgeSubject(f.cfg.SubjectPrefix+"."+sid), natsjs.WithPurgeSequence(upTo+1))
		return late.LastSeq, err
	}
	a := archive.New(f.store, f.log, &secondWrite{Archive: rb, f: f, want: &want}, archive.Options{Node: "n1", Now: f.clock.Now})
	out, _, err := a.Archive(ctx, s.SessionID, time.Now().Add(time.Hour))
	if err != nil || out != archive.Repaired || calls != 1 {
		t.Fatalf("archive: %v %v (%d races), want repaired", out, err, calls)
	}
	f.clock.advance(time.Hour)
	res := f.restore(s.SessionID)
	f.wait(f.store, res.LastSeq)
	if got := f.export(f.store, s.SessionID); got != want || !strings.Contains(got, "second late question") {
		t.Errorf("restored:\n%s\nwant:\n%s", got, want)
	}
}

// secondWrite appends once more just before the second purge (the first
// of the repair), and notes the session's export then.
type secondWrite struct {
	session.Archive
	f    *fixture
	n    int
	want *string
}

func (b *secondWrite) PurgeUpTo(ctx context.Context, sid string, upTo uint64) (uint64, error) {
	if b.n++; b.n == 2 {
		b.f.appendOne(sid, "second late question")
		*b.want = b.f.export(b.f.store, sid)
	}
	return b.Archive.PurgeUpTo(ctx, sid, upTo)
}

// An append that lands after the archiver read the log's end but before
// the purge's check keeps the session in the log: it is active.
func TestAppendBeforePurgeKeepsTheSession(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.create(2)
	rb := &racingBackend{Archive: f.arch, race: func(ctx context.Context, sid string, upTo uint64) (uint64, error) {
		f.appendOne(sid, "still here")
		return f.arch.PurgeUpTo(ctx, sid, upTo)
	}}
	a := archive.New(f.store, f.log, rb, archive.Options{Node: "n1", Now: f.clock.Now})
	out, _, err := a.Archive(ctx, s.SessionID, time.Now().Add(time.Hour))
	if err != nil || out != archive.Active {
		t.Fatalf("archive: %v %v, want active", out, err)
	}
	recs, err := f.log.Read(ctx, s.SessionID, 0)
	if err != nil || len(recs) != 4 {
		t.Fatalf("the session in the log: %d records, %v; want all 4", len(recs), err)
	}
}

// Writers append to every session while passes archive them (the clock is
// an hour ahead, so every session is a candidate). Whatever the
// interleaving, every acknowledged entry ends up either in the log, in a
// session with its header, or in the archive's copy; the log never holds
// records a Store must skip.
func TestWritersRacingPasses(t *testing.T) {
	f := newFixture(t)
	f.svc.Retry = writer.RetryPolicy{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	ctx := context.Background()
	const sessions = 12
	acked := make([][]string, sessions)
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = f.create(1).SessionID
	}
	f.clock.advance(time.Hour)
	// The writers stop when their session is archived, or once the passes
	// are over: a writer fast enough to make every pass find its session
	// active would otherwise write for ever.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, sid := range ids {
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				text := fmt.Sprintf("s%d-e%d", i, k)
				if _, err := f.svc.Append(ctx, sid, wire.AppendRequest{Entries: []json.RawMessage{entryJSON(text)}}); err != nil {
					return // archived: the session is gone
				}
				acked[i] = append(acked[i], text)
				// Paced, as an agent writes: a writer that appends back to
				// back makes nearly every pass find its session active
				// (a pass takes a few ms), and the test would exercise
				// little but that.
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(1+k%3) * time.Millisecond):
				}
			}
		})
	}
	var total wire.ArchivePass
	for pass := 0; pass < 50 && len(f.store.Idle(f.clock.Now())) > 0; pass++ {
		res, err := f.a.Pass(ctx, 0)
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		total.Archived += res.Archived
		total.Repaired += res.Repaired
		total.Active += res.Active
	}
	close(stop)
	wg.Wait()
	t.Logf("archived %d (repaired %d), found active %d times", total.Archived, total.Repaired, total.Active)
	rebuilt := f.newStore()
	f.wait(rebuilt, f.logEnd())
	if st := rebuilt.Stats(); st.SkippedRecs != 0 {
		t.Errorf("a Store rebuilt from the log skipped %d records: a session was torn", st.SkippedRecs)
	}
	f.clock.advance(time.Hour)
	for i, sid := range ids {
		var content string
		if rebuilt.Has(sid) {
			content = f.export(rebuilt, sid)
		} else {
			res := f.restore(sid)
			f.wait(f.store, res.LastSeq)
			content = f.export(f.store, sid)
		}
		for _, text := range acked[i] {
			if !strings.Contains(content, `"`+text+`"`) {
				t.Errorf("session %d: acknowledged entry %s is lost", i, text)
			}
		}
	}
}
