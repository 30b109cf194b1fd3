package store_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
)

// silentFeed is a log whose stream info goes unanswered, as one can while
// the cluster elects leaders: Identity waits for its context.
type silentFeed struct {
	*session.MemLog
	asked chan struct{}
}

func (f *silentFeed) Identity(ctx context.Context) (string, error) {
	select {
	case f.asked <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return "", ctx.Err()
}

// TestCloseIdentityUnanswered: a Store whose log does not say what it is
// closes within the identity bound, not Close's minute-long snapshot
// budget (a pi-node's shutdown once waited that out behind a handed-back
// shard), and writes no snapshot the next start could not recognize.
func TestCloseIdentityUnanswered(t *testing.T) {
	store.ShortIdentityTimeout(t, 200*time.Millisecond)
	l := session.NewMemLog(1000, 1<<20)
	writeSessions(t, l, 2)
	feed := &silentFeed{MemLog: l, asked: make(chan struct{}, 1)}
	dir := t.TempDir()
	st := store.New(feed, store.Options{Log: l, SnapshotDir: dir})
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := st.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- st.Close() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Close wrote a snapshot without knowing its log's identity")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close still waits for the log's identity after 20 s; the bound is 200 ms")
	}
	select {
	case <-feed.asked:
	default:
		t.Fatal("the Store never asked for the identity: the test proves nothing")
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Errorf("left in the snapshot directory: %s", f.Name())
	}
}
