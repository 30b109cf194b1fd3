package service_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// backend is one implementation of the log the engine runs on. Every engine
// test runs against each (see backends_test.go).
type backend struct {
	log     session.Log
	feed    session.Feed
	cursors session.Cursors
	// load stores whole sessions as fast as the backend can (setup for
	// tests about what happens after); default: imports.
	load func(t *testing.T, files [][]byte) uint64
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func user(text string) []byte {
	b, _ := json.Marshal(map[string]any{"role": "user", "content": text, "timestamp": 1})
	return b
}

func assistant(text string) []byte {
	b, _ := json.Marshal(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}},
		"provider": "anthropic", "model": "claude", "stopReason": "stop", "timestamp": 2})
	return b
}

func openStore(t *testing.T, b backend) *store.Store {
	t.Helper()
	st := store.New(b.feed, store.Options{Log: b.log})
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// waitApplied waits until st has applied seq, for as long as the Store
// makes progress: it fails only when it has applied nothing more for 30 s
// (times testutil.Scale). How long a whole rebuild takes is the machine's:
// StoreRestart's 200k records under the race detector on a loaded 2-core
// machine outlasted 30 s in CI, and a larger fixed bound only moved the
// guess.
func waitApplied(t *testing.T, st *store.Store, seq uint64) {
	t.Helper()
	stall := testutil.Scale(30 * time.Second)
	for {
		from := st.Applied()
		ctx, cancel := context.WithTimeout(context.Background(), stall)
		err := st.WaitFor(ctx, seq)
		cancel()
		if err == nil {
			return
		}
		if st.Applied() == from {
			t.Fatalf("nothing applied for %v: %v", stall, err)
		}
	}
}

func exportOf(t *testing.T, st *store.Store, id string) []byte {
	t.Helper()
	var out []byte
	err := st.View(context.Background(), id, func(d *store.Doc) error {
		out = d.Tree.AppendJSONL(nil)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
