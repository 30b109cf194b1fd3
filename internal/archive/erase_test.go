package archive_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
)

// erasure is one Erase of the history: the session and what it answered.
type erasure struct {
	sid string
	res wire.DeleteReply
	err error
}

// TestEraseRacesArchiving records a history of erasures run while a
// retention pass archives the same idle sessions (each erasure lands
// somewhere in a session's export, copy, purge and notice), then checks
// it: every erasure succeeded; an erased session is in no part of the log,
// in no copy of the archive, in no Store, and has its ledger line; every
// other session is archived whole (its restore equals its export before);
// a second pass brings no erased session back.
func TestEraseRacesArchiving(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const n = 24
	var sids []string
	want := map[string]string{}
	for range n {
		s := f.create(3)
		sids = append(sids, s.SessionID)
		want[s.SessionID] = f.export(f.store, s.SessionID)
	}
	f.clock.advance(2 * time.Hour)

	hist := make([]erasure, 0, n/2)
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := f.a.Pass(ctx, time.Hour); err != nil {
			t.Errorf("pass: %v", err)
		}
	})
	for i, sid := range sids {
		if i%2 == 0 {
			continue
		}
		wg.Go(func() {
			res, err := f.a.Erase(ctx, sid, 0, "test")
			mu.Lock()
			hist = append(hist, erasure{sid, res, err})
			mu.Unlock()
		})
	}
	wg.Wait()
	if _, err := f.a.Pass(ctx, time.Hour); err != nil {
		t.Fatalf("second pass: %v", err)
	}
	f.wait(f.store, f.logEnd())

	ledger, err := f.arch.Erasures(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lined := map[string]bool{}
	for _, l := range ledger {
		lined[l.Session] = l.By == "test" && !l.At.IsZero()
	}
	erased := map[string]bool{}
	for _, h := range hist {
		erased[h.sid] = true
		if h.err != nil {
			t.Errorf("erase %s: %v", h.sid, h.err)
			continue
		}
		// Its 4 records from the log, or its copy from the archive, or
		// both when the erasure met the session between the two.
		if h.res.Records == 0 && h.res.ArchivedCopies == 0 {
			t.Errorf("erase %s: %+v erased nothing", h.sid, h.res)
		}
		if err := gone(ctx, f, h.sid); err != nil {
			t.Error(err)
		}
		if !lined[h.sid] {
			t.Errorf("erase %s: no ledger line naming who", h.sid)
		}
	}
	for _, sid := range sids {
		if erased[sid] {
			continue
		}
		if lined[sid] {
			t.Errorf("%s: a ledger line, never erased", sid)
		}
		f.restore(sid)
		f.wait(f.store, f.logEnd())
		if got := f.export(f.store, sid); got != want[sid] {
			t.Errorf("%s restored: %q, want %q", sid, got, want[sid])
		}
	}
}

// gone is nil when sid is in no part of the log, no archived copy and not
// in the fixture's Store.
func gone(ctx context.Context, f *fixture, sid string) error {
	if _, err := f.log.Read(ctx, sid, 0); !errors.Is(err, wire.ErrNotFound) {
		return fmt.Errorf("%s: read after the erasure: %v, want not found", sid, err)
	}
	if cs, err := f.arch.Find(ctx, sid); err != nil || len(cs) != 0 {
		return fmt.Errorf("%s: %d archived copies after the erasure (%v)", sid, len(cs), err)
	}
	if f.store.Has(sid) {
		return fmt.Errorf("%s: the Store holds it after the erasure", sid)
	}
	return nil
}
