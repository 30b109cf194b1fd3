//go:build linux

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// holdStatus is the part of /v1/status about a node's share.
type holdStatus struct {
	Store struct {
		Sessions int `json:"sessions"`
		Shards   []struct {
			Shard        int    `json:"shard"`
			Sessions     int    `json:"sessions"`
			Holding      string `json:"holding"`
			MemoryBudget int64  `json:"memoryBudget"`
		} `json:"shards"`
	} `json:"store"`
	JetStream struct {
		Hold    int `json:"hold"`
		Members []struct {
			Node  string `json:"node"`
			Ready []int  `json:"ready"`
		} `json:"members"`
	} `json:"jetstream"`
}

// servers is, by shard, which of nodes serve it (and an error naming a
// node that could not be asked, or holds a shard it does not serve yet).
func servers(nodes []*piNode, shards int) ([][]string, map[string]holdStatus, error) {
	out := make([][]string, shards)
	sts := map[string]holdStatus{}
	for _, nd := range nodes {
		var st holdStatus
		if err := proctest.GetJSON(nd.base+"/v1/status", &st); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", nd.name, err)
		}
		if len(st.Store.Shards) != shards {
			return nil, nil, fmt.Errorf("%s lists %d shards, want %d", nd.name, len(st.Store.Shards), shards)
		}
		for _, sh := range st.Store.Shards {
			switch sh.Holding {
			case "serving":
				out[sh.Shard] = append(out[sh.Shard], nd.name)
			case "catching-up":
				return nil, nil, fmt.Errorf("%s is still catching up on shard %d", nd.name, sh.Shard)
			case "elsewhere":
			default:
				return nil, nil, fmt.Errorf("%s: shard %d holding %q", nd.name, sh.Shard, sh.Holding)
			}
		}
		sts[nd.name] = st
	}
	return out, sts, nil
}

// servedThroughout reads the nodes' logs as the history of who served which
// shard ("serving a shard", logged once it serves; "handing a shard back",
// logged before it stops: each span as recorded is within the real one)
// and returns, for the window [from, to], how many hand-backs it holds and,
// by shard, the fewest nodes serving it at any instant. Every node must
// have been up all through the window (or have joined in it).
func servedThroughout(t *testing.T, nodes []*piNode, shards int, from, to time.Time) (int, []int) {
	t.Helper()
	type event struct {
		at    time.Time
		delta int
	}
	events := make([][]event, shards)
	start := make([]int, shards) // serving at from
	handBacks := 0
	for _, nd := range nodes {
		out, err := nd.Output()
		if err != nil {
			t.Fatal(err)
		}
		serving := map[int]bool{}
		for line := range strings.Lines(out) {
			delta := 0
			switch {
			case strings.Contains(line, `msg="serving a shard"`) && !strings.Contains(line, "err="):
				delta = 1
			case strings.Contains(line, `msg="handing a shard back"`):
				delta = -1
			default:
				continue
			}
			var at time.Time
			k := -1
			for f := range strings.FieldsSeq(line) {
				if v, ok := strings.CutPrefix(f, "time="); ok {
					if at, err = time.Parse("2006-01-02T15:04:05.000Z07:00", v); err != nil {
						t.Fatalf("%s: %q: %v", nd.name, line, err)
					}
				} else if v, ok := strings.CutPrefix(f, "shard="); ok && k < 0 {
					fmt.Sscan(v, &k)
				}
			}
			if k < 0 || k >= shards || at.IsZero() {
				t.Fatalf("%s: no shard or time in %q", nd.name, line)
			}
			if serving[k] == (delta > 0) {
				t.Fatalf("%s: %q, but it was serving shard %d: %v", nd.name, line, k, serving[k])
			}
			serving[k] = delta > 0
			switch {
			case at.Before(from):
				start[k] += delta
			case !at.After(to):
				events[k] = append(events[k], event{at, delta})
				if delta < 0 {
					handBacks++
				}
			}
		}
	}
	low := make([]int, shards)
	for k := range shards {
		// Ties: a start before a stop (the stop's node saw the start first).
		slices.SortStableFunc(events[k], func(a, b event) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return b.delta - a.delta
		})
		n := start[k]
		low[k] = n
		for _, e := range events[k] {
			n += e.delta
			low[k] = min(low[k], n)
		}
	}
	return handBacks, low
}

// sharesBudget checks that each node divides its --memory-budget evenly
// among the shards it serves (all it holds, once caught up), and gives none
// to the others.
func sharesBudget(t *testing.T, sts map[string]holdStatus, budget int64) {
	t.Helper()
	for name, st := range sts {
		served := 0
		for _, sh := range st.Store.Shards {
			if sh.Holding == "serving" {
				served++
			}
		}
		for _, sh := range st.Store.Shards {
			want := int64(0)
			if sh.Holding == "serving" {
				want = budget / int64(served)
			}
			if sh.MemoryBudget != want {
				t.Errorf("%s gives shard %d (%s) a memory budget of %d; serving %d shards of a budget of %d, want %d", name, sh.Shard, sh.Holding, sh.MemoryBudget, served, budget, want)
			}
		}
	}
}

// heldByExactly waits until every shard is served by exactly the hold of
// nodes that the map assigns it among them (shard.Holders), and returns
// who serves what and how long that took. A count of hold alone is not
// enough: a node whose heartbeat a loaded machine delayed drops out of the
// others' view of the members for a moment, and another takes its shard
// until it is back (a share of the right size on the wrong nodes).
func heldByExactly(t *testing.T, nodes []*piNode, shards, hold int, within time.Duration) ([][]string, map[string]holdStatus, time.Duration) {
	t.Helper()
	names := make([]string, len(nodes))
	for i, nd := range nodes {
		names[i] = nd.name
	}
	var by [][]string
	var sts map[string]holdStatus
	took := testutil.WaitFor(t, within, testutil.Awaiting(fmt.Sprintf("every shard served by the %d nodes the map assigns it", hold), func() error {
		var err error
		if by, sts, err = servers(nodes, shards); err != nil {
			return err
		}
		for k, ns := range by {
			want := shard.Holders(k, names, hold)
			if len(ns) != hold || len(want) != hold {
				return fmt.Errorf("shard %d served by %v, the map assigns %v", k, ns, want)
			}
			for _, n := range want {
				if !slices.Contains(ns, n) {
					return fmt.Errorf("shard %d served by %v, the map assigns %v", k, ns, want)
				}
			}
		}
		return nil
	}))
	return by, sts, took
}

// passClient runs archive passes: a request that lasts the whole pass.
var passClient = &http.Client{Timeout: 2 * time.Minute}

// TestHoldShare: five nodes, six shards, each shard held by two (--hold
// defaults to 2 on a sharded store). Every node holds only its share in
// memory and answers for every session all the same — the others' through
// a holder (Pi-Served-By), with read your writes through the node written
// to and no minSeq. A node killed with SIGKILL under write load: every
// shard is held by two again within a bound, and no acknowledged entry is
// lost; a node added takes its share and the others hand theirs back.
func TestHoldShare(t *testing.T) {
	skipShort(t)
	t.Parallel()
	if testShards() > 1 {
		t.Skipf("starts its own store of 6 shards; PI_NODE_SHARDS=%d would give every node another count", testShards())
	}
	const shards, hold = 6, 2
	const budget = 60 << 20
	nodes := startEmbeddedClusterWith(t, 5, "--shards", fmt.Sprint(shards), "--memory-budget", fmt.Sprint(budget))
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	by, sts, took := heldByExactly(t, nodes, shards, hold, readyTimeout)
	t.Logf("MEASURED hold: every shard served by %d of 5 nodes %v after the nodes were ready: %v", hold, took.Round(time.Millisecond), by)
	for _, nd := range nodes {
		if st := sts[nd.name]; st.JetStream.Hold != hold || len(st.JetStream.Members) != 5 {
			t.Fatalf("%s reports hold %d and %d members, want %d and 5", nd.name, st.JetStream.Hold, len(st.JetStream.Members), hold)
		}
	}

	var mu sync.Mutex
	var all []*ackedSession
	bases := make([]string, len(nodes))
	for i, nd := range nodes {
		bases[i] = nd.base
	}
	live := slices.Clone(bases[:4]) // the writers avoid the node they will see killed
	killAfter := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	var forwarded, local sync.Map
	for w := range 5 {
		wg.Go(func() {
			hc := proctest.ProbeClient
			for i := 0; ctx.Err() == nil && i < 3; i++ {
				// Every shard gets sessions (15 over 6), so that a node holding
				// only its share holds fewer than all of them: ids drawn at
				// random left a shard empty now and then.
				s := &ackedSession{id: testutil.SessionID(t)}
				for shard.Of(s.id, shards) != (w*3+i)%shards {
					s.id = testutil.SessionID(t)
				}
				seq, err := createSession(ctx, hc, live, w, s.id, "/work/"+s.id[:8], time.Now())
				if err != nil {
					t.Error(err)
					return
				}
				s.last = seq
				parent := ""
				for j := range 12 {
					e := proctest.NewEntry(fmt.Sprintf("h%02d%02d%02d", w, i, j), parent, fmt.Sprintf("w%d s%d #%d", w, i, j), time.Now())
					node := (w + j) % len(live)
					var wr proctest.WriteResult
					st, _, data, err := proctest.Do(ctx, hc, http.MethodPost, live[node]+"/v1/sessions/"+s.id+"/entries", proctest.AppendBody(e))
					direct := err == nil && st == http.StatusOK && json.Unmarshal(data, &wr) == nil
					if !direct { // the outcome unknown: the same bytes again, to any node
						if wr, err = appendRetry(ctx, hc, live, node+1, s.id, e); err != nil {
							t.Error(err)
							return
						}
					}
					s.acked, s.last, parent = append(s.acked, e.ID), wr.LastSeq, e.ID
					if !direct {
						continue
					}
					// Read your writes through the node written to, without
					// minSeq: that node may not hold the session's shard.
					st, h, data, err := proctest.Do(ctx, hc, http.MethodGet, live[node]+"/v1/sessions/"+s.id+"/entries?limit=1000", nil)
					if err != nil || st != http.StatusOK {
						continue // a node failing over: the reads at the end check the rest
					}
					if !strings.Contains(string(data), `"id":"`+e.ID+`"`) {
						t.Errorf("%s: session %s lacks %s, which it acknowledged a moment ago (served by %q)", live[node], s.id, e.ID, h.Get("Pi-Served-By"))
					}
					if by := h.Get("Pi-Served-By"); by != "" {
						forwarded.Store(by, true)
					} else {
						local.Store(live[node], true)
					}
				}
				mu.Lock()
				all = append(all, s)
				if len(all) == 5 {
					once.Do(func() { close(killAfter) })
				}
				mu.Unlock()
			}
		})
	}
	victim := nodes[4]
	select {
	case <-killAfter:
	case <-ctx.Done():
		t.Fatal("the writers did not get going")
	}
	victim.Kill()
	killed := time.Now()
	t.Logf("SIGKILL %s with writers running", victim.name)
	wg.Wait()
	if t.Failed() {
		return
	}
	survivors := nodes[:4]
	by, sts, _ = heldByExactly(t, survivors, shards, hold, 2*time.Minute)
	t.Logf("MEASURED hold: every shard served by %d of the 4 survivors %v after the kill: %v", hold, time.Since(killed).Round(time.Millisecond), by)
	n := 0
	forwarded.Range(func(any, any) bool { n++; return true })
	if n == 0 {
		t.Fatal("no read was forwarded to a holder: the test did not exercise forwarding")
	}

	sharesBudget(t, sts, budget)

	// A node holds only its share: the sessions of the shards it serves.
	total := len(all)
	for _, nd := range survivors {
		st := sts[nd.name]
		want := 0
		for _, s := range all {
			if slices.Contains(by[shard.Of(s.id, shards)], nd.name) {
				want++
			}
		}
		if st.Store.Sessions != want || want == total {
			t.Errorf("%s holds %d sessions in memory; its shards have %d of %d", nd.name, st.Store.Sessions, want, total)
		}
	}

	checkAll := func(on []*piNode) {
		t.Helper()
		checkAcked(ctx, t, on, all)
		for _, nd := range on {
			var page struct {
				Sessions []struct {
					SessionID string `json:"sessionId"`
				} `json:"sessions"`
			}
			if err := proctest.GetJSON(nd.base+"/v1/sessions?limit=1000", &page); err != nil {
				t.Fatalf("%s: list: %v", nd.name, err)
			}
			var ids []string
			for _, s := range page.Sessions {
				ids = append(ids, s.SessionID)
			}
			sort.Strings(ids)
			for _, s := range all {
				if _, ok := slices.BinarySearch(ids, s.id); !ok {
					t.Fatalf("%s's catalog lacks %s (%d listed)", nd.name, s.id, len(ids))
				}
			}
		}
	}
	checkAll(survivors)

	// A sixth node joins: it takes its share, the others hand theirs back.
	steady := time.Now() // every shard served by exactly hold survivors
	n6 := startJoiningNode(t, survivors, "n6", "--shards", fmt.Sprint(shards), "--memory-budget", fmt.Sprint(budget))
	n6.waitReady(t)
	joined := time.Now()
	withNew := append(slices.Clone(survivors), n6)
	by, sts, _ = heldByExactly(t, withNew, shards, hold, 2*time.Minute)
	t.Logf("MEASURED hold: with n6, every shard served by exactly %d nodes %v after it was ready: %v", hold, time.Since(joined).Round(time.Millisecond), by)
	took6 := false
	for _, ns := range by {
		took6 = took6 || slices.Contains(ns, "n6")
	}
	if !took6 {
		t.Fatalf("n6 serves no shard: %v", by)
	}
	sharesBudget(t, sts, budget)
	// Never fewer than hold meanwhile, by the nodes' own record of when
	// each started and stopped serving each shard.
	handBacks, low := servedThroughout(t, withNew, shards, steady, time.Now())
	if handBacks == 0 {
		t.Fatal("no node logged a hand-back while n6 took its share: the history proves nothing")
	}
	for k, least := range low {
		if least < hold {
			t.Errorf("shard %d was served by %d nodes at some point while n6 joined (want never fewer than %d)", k, least, hold)
		}
	}
	t.Logf("MEASURED hold: while n6 joined, %d hand-backs; the fewest nodes serving each shard at any instant: %v", handBacks, low)
	checkAll(withNew)

	// Archiving: each node's pass covers the shards it serves, under each
	// shard's own lease; a pass on every node archives every session.
	archived := 0
	for _, nd := range withNew {
		var res struct {
			Archived int `json:"archived"`
		}
		// A pass runs within the request, archiving every session of the
		// node's shards: its length is not what is tested, and a loaded
		// CI machine once took longer than the probe client's 5 s.
		st, _, body, err := proctest.Do(context.Background(), passClient, http.MethodPost, nd.base+"/v1/archive/run", []byte(`{"olderThan":"0s"}`))
		if err != nil || st != http.StatusOK {
			t.Fatalf("archive pass on %s: %d %v %s", nd.name, st, err, body)
		}
		if err := json.Unmarshal(body, &res); err != nil {
			t.Fatal(err)
		}
		archived += res.Archived
	}
	if archived != len(all) {
		t.Fatalf("passes on every node archived %d sessions, want all %d", archived, len(all))
	}
	for _, nd := range withNew {
		var page struct {
			Sessions []json.RawMessage `json:"sessions"`
		}
		if err := proctest.GetJSON(nd.base+"/v1/sessions?consistency=strong", &page); err != nil || len(page.Sessions) != 0 {
			t.Fatalf("%s lists %d sessions after every one was archived (%v)", nd.name, len(page.Sessions), err)
		}
	}
}
