package search_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/search"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestIndexErase: an index on disk keeps no cwd of its own — reopened, it
// takes a session's cwd from its source (the Store) for the entries that
// come after — and after an erasure notice no file of it holds the
// session's text or cwd (the segments are merged, and root.bolt never
// held the cwd), where both were on disk before.
func TestIndexErase(t *testing.T) {
	c := newCorpus(t, 200)
	const sid = "01a2b3c4-0000-7000-8000-00000000e0e0"
	cwd, word := "/home/zqcwdmarker", "zqtextmarker"
	c.add(t, []string{
		`{"type":"session","version":3,"id":"` + sid + `","timestamp":"2026-11-03T10:00:00.000Z","cwd":"` + cwd + `"}`,
		`{"type":"message","id":"e1","parentId":null,"timestamp":"2026-11-03T10:00:01.000Z","message":{"role":"user","content":"the ` + word + ` question","timestamp":1}}`,
	})
	dir, x := indexOnDisk(t, c)
	if !slices.Contains(terms(t, x, "text"), word) || !slices.Contains(terms(t, x, "cwd"), cwd) {
		t.Fatal("the session's word and cwd are not terms of the index: this test could not fail")
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	// The dictionary's encoding (an FST) splits terms; root.bolt holds the
	// internal records, which never held the cwd.
	if found := testutil.FilesHolding(t, []string{dir}, cwd); len(found) != 0 {
		t.Fatalf("the index keeps the cwd itself: %v", found)
	}
	e2 := `{"type":"message","id":"e2","parentId":"e1","timestamp":"2026-11-03T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"the ` + word + ` answer"}],"provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}}`
	seqs, err := c.log.Append(context.Background(), sid, c.last, []session.Record{{Type: "message", ID: "e2", Parent: "e1", Data: []byte(e2)}})
	if err != nil {
		t.Fatal(err)
	}

	y, err := search.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	y.SetCwdSource(func(s string) (string, bool) { return cwd, s == sid })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { y.Run(ctx, c.log); close(done) }()
	t.Cleanup(func() { cancel(); <-done; _ = y.Close() })
	waitFor(t, y, seqs[0])
	q, _ := search.Parse(word + " cwd:" + cwd)
	if p, err := y.Search(context.Background(), q, c, "", 10, nil); err != nil || p.Total != 2 {
		t.Fatalf("%s after reopening: %d hits (%v), want both entries: the one after the restart under the source's cwd", word, p.Total, err)
	}

	res, err := c.log.Erase(context.Background(), sid, 0)
	if err != nil || res.Records != 3 {
		t.Fatalf("erase: %+v %v", res, err)
	}
	last, _ := c.log.LastSeq(context.Background())
	waitFor(t, y, last)
	q, _ = search.Parse("session:" + sid)
	if p, _ := y.Search(context.Background(), q, c, "", 10, nil); p.Total != 0 {
		t.Fatalf("the erased session still has %d hits", p.Total)
	}
	testutil.WaitFor(t, time.Minute, func() error {
		for _, f := range []string{"text", "cwd"} {
			if ts := terms(t, y, f); slices.Contains(ts, word) || slices.Contains(ts, cwd) {
				return fmt.Errorf("after the erasure, the %s dictionary still holds the session's term", f)
			}
		}
		if found := testutil.FilesHolding(t, []string{dir}, word, cwd); len(found) > 0 {
			return fmt.Errorf("after the erasure: %s", strings.Join(found, "; "))
		}
		return nil
	})
}

func terms(t *testing.T, x *search.Index, field string) []string {
	t.Helper()
	ts, err := x.Terms(field)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
