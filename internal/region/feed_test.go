package region

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/search"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// These tests run a real Store over a Feed switched between in-memory
// logs, which stand for streams: logs built by the same appends hold the
// same records at the same sequences, as a mirror holds its origin's.

const testSID = "0190b6a4-7c1f-7cc3-9d32-6c5e2f1d0a01"

func memLog() *session.MemLog { return session.NewMemLog(1000, 1<<20) }

func header(t *testing.T) session.Record {
	t.Helper()
	line := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-11-30T10:00:00.000Z","cwd":"/w"}`, testSID)
	return session.Record{Type: "session", Data: []byte(line)}
}

func entry(id, parent string) session.Record {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	line := fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-11-30T10:00:01.000Z","message":{"role":"user","content":%q}}`, id, p, id)
	return session.Record{Type: "message", ID: id, Parent: parent, Data: []byte(line)}
}

// appendAll appends recs one by one to each log, checking every log gives
// them the same sequences.
func appendAll(t *testing.T, recs []session.Record, logs ...*session.MemLog) {
	t.Helper()
	ctx := context.Background()
	for _, r := range recs {
		var seq uint64
		for i, l := range logs {
			last, _ := l.LastSeq(ctx)
			seqs, err := l.Append(ctx, testSID, last, []session.Record{r})
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 && seqs[0] != seq {
				t.Fatalf("logs diverge: %d vs %d", seqs[0], seq)
			}
			seq = seqs[0]
		}
	}
}

// ids returns the entry ids the Store holds for the session, in log order.
func ids(t *testing.T, st *store.Store) []string {
	t.Helper()
	var out []string
	err := st.View(context.Background(), testSID, func(d *store.Doc) error {
		for i := range d.Tree.Len() {
			out = append(out, d.Tree.Entry(i).ID)
		}
		return nil
	})
	if err != nil {
		return nil
	}
	return out
}

func waitIDs(t *testing.T, st *store.Store, want string) {
	t.Helper()
	testutil.WaitFor(t, 5*time.Second, func() error {
		if got := fmt.Sprint(ids(t, st)); got != want {
			return fmt.Errorf("store holds %s, want %s", got, want)
		}
		return nil
	})
}

// openStore follows f with a Store whose Reset f calls, and records each
// switch f reports.
func openStore(t *testing.T, f *Feed) (*store.Store, func() []bool) {
	t.Helper()
	st := store.New(f, store.Options{Log: f})
	f.SetReset(st.Reset)
	var mu sync.Mutex
	var kept []bool
	f.onSwitch = func(k bool, _ uint64) {
		mu.Lock()
		kept = append(kept, k)
		mu.Unlock()
	}
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, func() []bool {
		mu.Lock()
		defer mu.Unlock()
		return append([]bool(nil), kept...)
	}
}

func TestFeedSwitchKeepsStateWithinOneHistory(t *testing.T) {
	home, mirror := memLog(), memLog()
	appendAll(t, []session.Record{header(t), entry("a1", ""), entry("a2", "a1")}, home, mirror)
	f := newFeed()
	f.Switch(home, func(uint64) bool { return true })
	st, kept := openStore(t, f)
	waitIDs(t, st, "[a1 a2]")

	// The node moves from the home's stream to its region's mirror: the
	// same history, so the Store goes on where it was.
	f.Switch(mirror, keeps(1, Record{Epoch: 1}, 0))
	appendAll(t, []session.Record{entry("a3", "a2")}, mirror)
	waitIDs(t, st, "[a1 a2 a3]")
	if got := st.Stats().Records; got != 4 {
		t.Errorf("records applied %d, want 4: the switch re-applied records", got)
	}
	if k := kept(); len(k) < 2 || !k[len(k)-1] {
		t.Errorf("switches %v, want the last kept", k)
	}
}

// twoHistories returns an old home and a new one that share a1 and then
// fork at 2: "lost", acknowledged by the old home and never mirrored, and
// b1, b2 of the new home.
func twoHistories(t *testing.T) (oldHome, newHome *session.MemLog) {
	t.Helper()
	oldHome, newHome = memLog(), memLog()
	appendAll(t, []session.Record{header(t), entry("a1", "")}, oldHome, newHome)
	appendAll(t, []session.Record{entry("lost", "a1")}, oldHome)
	appendAll(t, []session.Record{entry("b1", "a1"), entry("b2", "b1")}, newHome)
	return oldHome, newHome
}

func TestFeedSwitchResetsOnAnotherHistory(t *testing.T) {
	oldHome, newHome := twoHistories(t)

	f := newFeed()
	f.Switch(oldHome, func(uint64) bool { return true })
	st, kept := openStore(t, f)
	waitIDs(t, st, "[a1 lost]")

	f.Switch(newHome, keeps(1, Record{Epoch: 2, ForkSeq: 2}, 0))
	waitIDs(t, st, "[a1 b1 b2]")
	if k := kept(); len(k) == 0 || k[len(k)-1] {
		t.Errorf("switches %v, want the last one to reset", k)
	}
	if st.Applied() != 4 {
		t.Errorf("applied %d, want 4", st.Applied())
	}
}

func TestFeedSwitchKeepsStateAtTheFork(t *testing.T) {
	mirror, promoted := memLog(), memLog()
	appendAll(t, []session.Record{header(t), entry("a1", "")}, mirror, promoted)
	f := newFeed()
	f.Switch(mirror, func(uint64) bool { return true })
	st, kept := openStore(t, f)
	waitIDs(t, st, "[a1]")
	// A Store that applied nothing beyond the fork keeps its state in the
	// next epoch.
	f.Switch(promoted, keeps(1, Record{Epoch: 2, ForkSeq: 2}, 0))
	appendAll(t, []session.Record{entry("b1", "a1")}, promoted)
	waitIDs(t, st, "[a1 b1]")
	if k := kept(); len(k) == 0 || !k[len(k)-1] {
		t.Errorf("switches %v, want the last kept", k)
	}
	// Two epochs on, nothing is assumed shared.
	if keeps(1, Record{Epoch: 3, ForkSeq: 10}, 0)(1) {
		t.Error("a Store two epochs behind must be reset")
	}
}

// TestFeedViewResetsIndex: the full-text index follows a View of the Feed
// and takes each switch's decision for what it has indexed, apart from the
// Store: on a stream of another history it starts over (the entry only the
// old home held is no longer found), within one history it goes on.
func TestFeedViewResetsIndex(t *testing.T) {
	oldHome, newHome := twoHistories(t)

	f := newFeed()
	f.Switch(oldHome, func(uint64) bool { return true })
	idx, err := search.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(f, store.Options{Log: f, Search: idx, SearchFeed: f.View(idx.FeedReset)})
	f.SetReset(st.Reset)
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	found := func(word string) (int, error) {
		q, err := search.Parse(word)
		if err != nil {
			return 0, err
		}
		p, err := idx.Search(context.Background(), q, st, "", 10, nil)
		return len(p.Hits), err
	}
	expect := func(want map[string]int) {
		t.Helper()
		testutil.WaitFor(t, 5*time.Second, func() error {
			for w, n := range want {
				if got, err := found(w); err != nil || got != n {
					return fmt.Errorf("%q: %d hits (%v), want %d", w, got, err, n)
				}
			}
			return nil
		})
	}
	expect(map[string]int{"a1": 1, "lost": 1})
	applied := idx.Applied()

	// A failover to a home that never received "lost": the index starts
	// over on the new history, as the Store does.
	f.Switch(newHome, keeps(1, Record{Epoch: 2, ForkSeq: 2}, 0))
	waitIDs(t, st, "[a1 b1 b2]")
	expect(map[string]int{"a1": 1, "lost": 0, "b1": 1, "b2": 1})
	if idx.Applied() != 4 {
		t.Fatalf("index applied %d, want 4 (was %d on the old home)", idx.Applied(), applied)
	}

	// Within one history (the new home's mirror), the index goes on.
	mirror := memLog()
	appendAll(t, []session.Record{header(t), entry("a1", ""), entry("b1", "a1"), entry("b2", "b1")}, mirror)
	f.Switch(mirror, keeps(2, Record{Epoch: 2, ForkSeq: 2}, 0))
	appendAll(t, []session.Record{entry("b3", "b2")}, mirror)
	expect(map[string]int{"a1": 1, "b2": 1, "b3": 1})
	if idx.Applied() != 5 {
		t.Fatalf("index applied %d, want 5", idx.Applied())
	}
}
