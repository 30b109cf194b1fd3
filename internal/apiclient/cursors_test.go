package apiclient_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/nodetest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestCursorsOverAPI: get, CAS update, put, list, delete and the polling
// watch over both transports, against the KV-backed cursors underneath.
func TestCursorsOverAPI(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	for name, c := range transports(t, n) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			sid := testutil.SessionID(t)
			recs := records(t, sid, 2)
			seqs, err := apiclient.NewLog(c).Append(ctx, sid, 0, recs)
			if err != nil {
				t.Fatal(err)
			}
			last := seqs[len(seqs)-1]
			cur := apiclient.NewCursors(c)
			cur.PollInterval = 10 * time.Millisecond
			if _, err := cur.Get(ctx, sid, "w1"); !errors.Is(err, wire.ErrNotFound) {
				t.Fatalf("missing cursor: %v", err)
			}
			if _, err := cur.Get(ctx, sid, "bad.id"); !errors.Is(err, wire.ErrInvalid) {
				t.Fatalf("bad client id: %v", err)
			}
			rev, err := cur.Update(ctx, sid, "w1", session.Cursor{LeafID: recs[1].ID, Seq: last}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cur.Update(ctx, sid, "w1", session.Cursor{LeafID: recs[2].ID, Seq: last}, 0); !errors.Is(err, wire.ErrConflict) {
				t.Fatalf("create of an existing cursor: %v", err)
			}
			e, err := cur.Get(ctx, sid, "w1")
			if err != nil || e.Revision != rev || e.LeafID != recs[1].ID || e.Seq < last || e.UpdatedAt.IsZero() || e.Session != sid || e.Client != "w1" {
				t.Fatalf("get: %+v, %v", e, err)
			}
			kv, err := n.Cursors.Get(ctx, sid, "w1")
			if err != nil || kv.Revision != rev || kv.LeafID != recs[1].ID {
				t.Fatalf("the bucket holds %+v, %v", kv, err)
			}

			var mu sync.Mutex
			var seen []string
			wctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				done <- cur.Watch(wctx, sid, func(e session.CursorEntry, deleted bool) {
					mu.Lock()
					defer mu.Unlock()
					if deleted {
						seen = append(seen, "-"+e.Client)
					} else {
						seen = append(seen, e.Client+"@"+e.LeafID)
					}
				})
			}()
			rev2, err := cur.Update(ctx, sid, "w1", session.Cursor{LeafID: "", Seq: last}, rev)
			if err != nil || rev2 <= rev {
				t.Fatalf("CAS update: %d, %v", rev2, err)
			}
			if _, err := cur.Put(ctx, sid, "w2", session.Cursor{LeafID: recs[2].ID}); err != nil {
				t.Fatal(err)
			}
			list, err := cur.List(ctx, sid)
			if err != nil || len(list) != 2 || list[0].Client != "w1" || list[0].LeafID != "" || list[1].LeafID != recs[2].ID {
				t.Fatalf("list: %+v, %v", list, err)
			}
			saw := func(ev string) func() error {
				return func() error {
					mu.Lock()
					defer mu.Unlock()
					if !slices.Contains(seen, ev) {
						return fmt.Errorf("watch saw %q, want %q", seen, ev)
					}
					return nil
				}
			}
			testutil.WaitFor(t, 10*time.Second, saw("w1@"))
			testutil.WaitFor(t, 10*time.Second, saw("w2@"+recs[2].ID))
			if err := cur.Delete(ctx, sid, "w2"); err != nil {
				t.Fatal(err)
			}
			if err := cur.Delete(ctx, sid, "w2"); err != nil {
				t.Fatalf("second delete: %v", err)
			}
			testutil.WaitFor(t, 10*time.Second, saw("-w2"))
			stop()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("watch ended with %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if seen[len(seen)-1] != "-w2" {
				t.Fatalf("watch saw %q", seen)
			}
			if _, err := cur.List(ctx, testutil.SessionID(t)); !errors.Is(err, wire.ErrNotFound) {
				t.Fatalf("cursors of a missing session: %v", err)
			}
		})
	}
}
