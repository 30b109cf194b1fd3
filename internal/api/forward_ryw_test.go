package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// A read a node forwards carries what its own read would wait for, so
// that a holder that lags (stale after an election or a partition) waits
// for it, or answers 504, instead of answering without the node's own
// write. The Jepsen suite over 4 shards found a read through n2 miss a
// write n2 had acknowledged 6 s before, answered 200 by a stale holder.
// Each test fails without the fix with a 200 that lacks the write; a
// holder's short wait bound only makes the 504 come sooner.

// rywForward is a forward pair whose second holder, which lags behind
// closed gates, answers within a short bound; sid is a session both
// holders have applied, and the front has read it once through the
// holder.
func rywForward(t *testing.T) (*forwardPair, string) {
	t.Helper()
	p := newForwardPair(t, func(c *api.Config) { c.MinSeqTimeout = 300 * time.Millisecond })
	res := p.front.create(userMsg("u1", "hi"))
	// Applied by the second before its gates close: a session its Store
	// never saw would be read from the log, which is never stale.
	testutil.WaitFor(t, 10*time.Second, func() error {
		if !store.AppliedAt(p.second.svc.Store, res.LastSeq) {
			return fmt.Errorf("the second holder has not applied %d", res.LastSeq)
		}
		return nil
	})
	if code, b, by := get(p.front, "/v1/sessions/"+res.SessionID+"/entries"); code != http.StatusOK || by != "holder" {
		t.Fatalf("a read through the front: %d by %q: %s", code, by, b)
	}
	return p, res.SessionID
}

// toSecond makes the lagging second holder the only one that answers.
func (p *forwardPair) toSecond(t *testing.T) {
	t.Helper()
	for k := range 2 {
		if err := p.holder.api.StopShard(k); err != nil {
			t.Fatal(err)
		}
		if err := p.second.api.ServeShard(k); err != nil {
			t.Fatal(err)
		}
	}
}

// gates closes (false) or opens (true) the second holder's gates.
func (p *forwardPair) gatesOpen(open bool) {
	for _, g := range p.gates {
		if open {
			g.open()
		} else {
			g.close()
		}
	}
}

// appendVia appends a custom entry of type typ through e.
func appendVia(e *env, sid, typ string) writeResult {
	e.t.Helper()
	var wr writeResult
	e.ok(http.StatusOK, "POST", "/v1/sessions/"+sid+"/entries", `{"entries":[{"type":"custom","customType":"`+typ+`","data":{}}]}`, &wr)
	return wr
}

// readsIt checks that a read through e, once the second holder has caught
// up, is the second's and has the entry of type typ.
func readsIt(t *testing.T, p *forwardPair, e *env, sid, typ string) {
	t.Helper()
	p.gatesOpen(true)
	code, b, by := get(e, "/v1/sessions/"+sid+"/entries")
	if code != http.StatusOK || by != "second" || !strings.Contains(string(b), `"`+typ+`"`) {
		t.Fatalf("once the second caught up: %d by %q, want 200 by the second with %q: %s", code, by, typ, b)
	}
}

// TestForwardedReadAfterRestart: a node killed right after it
// acknowledged a write has forgotten it once restarted; the reads it
// forwards wait for the log's end as it first learned it after the
// restart, as its own reads do (FirstEnd).
func TestForwardedReadAfterRestart(t *testing.T) {
	p, sid := rywForward(t)
	p.gatesOpen(false)
	appendVia(p.front, sid, "before-kill")
	// The front, killed and restarted: a new Service, nothing remembered,
	// Unheld Stores as before.
	logs := p.front.svc.Log.(*shard.Sharded).Logs()
	var unheld []*store.Store
	for _, l := range logs {
		unheld = append(unheld, store.Unheld(l.(*shard.Log)))
	}
	set, err := store.NewSet(shard.OneMap(len(logs)), unheld)
	if err != nil {
		t.Fatal(err)
	}
	front := &env{t: t, cursors: p.front.cursors, logs: &testutil.SyncBuffer{}}
	front.svc = &service.Service{Log: p.front.svc.Log, Store: set, Cursors: front.cursors}
	front.serve(func(c *api.Config) {
		c.NodeName, c.Holding, c.Forward = "front", &holding{n: len(logs), serves: map[int]bool{}}, p.nc
	})
	p.toSecond(t)
	front.fails(http.StatusGatewayTimeout, "timeout", "", "GET", "/v1/sessions/"+sid+"/entries", nil)
	readsIt(t, p, front, sid, "before-kill")
}

// TestForwardedReadWhileTaking: a node taking the session's shard over
// (its Store held, caught up on the write, not serving yet) forwards its
// reads, and they wait for the write it acknowledged while the shard was
// held elsewhere: its own Store having applied it says nothing of the
// holder's. (So does a node handing the shard back, between its last
// answer and its Unheld Store.)
func TestForwardedReadWhileTaking(t *testing.T) {
	p, sid := rywForward(t)
	p.gatesOpen(false)
	wr := appendVia(p.front, sid, "while-unheld")
	k := shard.OneMap(2).Of(sid)
	sl := p.front.svc.Log.(*shard.Sharded).Logs()[k].(*shard.Log)
	taking := store.New(sl, store.Options{Log: sl, Writer: sl})
	if err := taking.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = taking.Close() })
	if _, err := p.front.svc.Store.(*store.Set).Replace(k, taking); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		if taking.Applied() < wr.LastSeq {
			return fmt.Errorf("the front's new Store of shard %d has not applied %d", k, wr.LastSeq)
		}
		return nil
	})
	p.toSecond(t)
	p.front.fails(http.StatusGatewayTimeout, "timeout", "", "GET", "/v1/sessions/"+sid+"/entries", nil)
	readsIt(t, p, p.front, sid, "while-unheld")
}
