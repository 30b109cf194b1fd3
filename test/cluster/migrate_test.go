//go:build linux

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/client"
	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestShardMigration: a running 3-node store of one stream, holding
// sessions, moves to 4 shards with `pi-ctl shards migrate --to 4` and no
// restart: writers keep appending to the existing sessions all along; every
// node follows the new streams before the new epoch starts; from then on a
// new session lands on its shard among 4 (its sequences are that shard's),
// while the sessions made before stay on shard 0, readable and writable
// through every node; a node killed and started again (without --shards)
// takes the migrated map from the store and serves every session.
func TestShardMigration(t *testing.T) {
	skipShort(t)
	t.Parallel()
	if testShards() != 1 {
		t.Skipf("migrates a store of one stream; PI_NODE_SHARDS=%d starts every node on a sharded one", testShards())
	}
	nodes := startEmbeddedCluster(t, 3)
	var bases []string
	for _, nd := range nodes {
		bases = append(bases, nd.base)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// Sessions made before the migration, each with a chain of entries
	// that a writer per session goes on extending until the end.
	old := make([]string, 4)
	for i := range old {
		old[i] = testutil.SessionID(t)
		if _, err := createSession(ctx, proctest.ProbeClient, bases, i, old[i], "/before", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	wctx, stopWriters := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string][]string{} // session -> entry ids acknowledged
	var writeErrs []error
	for i, sid := range old {
		wg.Go(func() {
			parent := ""
			for n := 0; wctx.Err() == nil; n++ {
				id := fmt.Sprintf("w%d-%04d", i, n)
				if _, err := appendRetry(wctx, proctest.ProbeClient, bases, i+n, sid, proctest.NewEntry(id, parent, "written across the migration", time.Now())); err != nil {
					if wctx.Err() == nil {
						mu.Lock()
						writeErrs = append(writeErrs, err)
						mu.Unlock()
					}
					return
				}
				mu.Lock()
				acked[sid] = append(acked[sid], id)
				mu.Unlock()
				parent = id
				time.Sleep(100 * time.Millisecond) // a writer's pace, not a wait for a condition
			}
		})
	}

	// A Go client writing to JetStream directly, made before the
	// migration: it must route by the new map too.
	gc, err := client.New(ctx, client.JetStreamURL(nodes[2].natsURL))
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()

	if out, err := piCtlAdmin(t, "shards", "migrate", "--to", "4", "--in", "5s", "--server", nodes[0].natsURL); err == nil || !strings.Contains(out, "--in must be at least 30s") {
		t.Fatalf("pi-ctl shards migrate --in 5s: %v, want refused:\n%s", err, out)
	}
	migrated := time.Now()
	out, err := piCtlAdmin(t, "shards", "migrate", "--to", "4", "--in", "30s", "--server", nodes[0].natsURL, "--json")
	if err != nil {
		t.Fatalf("pi-ctl shards migrate: %v\n%s", err, out)
	}
	var rep struct {
		Map     string `json:"map"`
		Changed bool   `json:"changed"`
		Epochs  []struct {
			From   *time.Time `json:"from"`
			Shards int        `json:"shards"`
		} `json:"epochs"`
		Streams []struct {
			Stream string `json:"stream"`
		} `json:"streams"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.Changed || len(rep.Epochs) != 2 || rep.Epochs[1].From == nil || len(rep.Streams) != 4 {
		t.Fatalf("pi-ctl shards migrate --json: %v\n%s", err, out)
	}
	start := *rep.Epochs[1].From
	m, err := shard.ParseMap(rep.Map)
	if err != nil {
		t.Fatal(err)
	}

	// Every node follows the four streams before the epoch starts.
	testutil.WaitFor(t, time.Until(start), func() error {
		for _, nd := range nodes {
			st, err := status(nd.base)
			if err != nil {
				return err
			}
			if len(st.Store.Shards) != 4 || len(st.JetStream.Shards) != 4 || st.JetStream.ShardMap != rep.Map {
				return fmt.Errorf("%s follows %d shard streams, lists %d, routes by map %q", nd.name, len(st.Store.Shards), len(st.JetStream.Shards), st.JetStream.ShardMap)
			}
		}
		return nil
	})
	t.Logf("MEASURED migration: every node followed the 4 shard streams %v after pi-ctl shards migrate was started (the new epoch starts %v after it)",
		time.Since(migrated).Round(time.Millisecond), start.Sub(migrated).Round(time.Millisecond))
	for time.Now().Before(start) {
		time.Sleep(time.Until(start)) // the epoch's start: a schedule, not a condition
	}

	// New sessions, through every node: each on its shard among 4.
	fresh := make([]string, 12)
	onShard := map[int]int{}
	for i := range fresh {
		fresh[i] = testutil.SessionID(t)
		last, err := createSession(ctx, proctest.ProbeClient, bases, i, fresh[i], "/after", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		want := shard.Of(fresh[i], 4)
		if m.Of(fresh[i]) != want || shard.OfSeq(last) != want {
			t.Fatalf("new session %s stored at %d, on shard %d; want shard %d", fresh[i], last, shard.OfSeq(last), want)
		}
		onShard[want]++
	}
	if len(onShard) < 2 {
		t.Fatalf("12 new sessions all on shard(s) %v", onShard)
	}
	for i := range 4 {
		s, err := gc.Create(client.WithCwd("/after/go"))
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.AppendMessage(ctx, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": fmt.Sprint("reply ", i)}},
			"provider": "fake", "model": "echo", "stopReason": "stop", "timestamp": time.Now().UnixMilli()})
		if err != nil {
			t.Fatalf("the Go client creating a session after the migration: %v", err)
		}
		if want := shard.Of(s.ID(), 4); shard.OfSeq(w.Seq) != want {
			t.Fatalf("the Go client stored new session %s at %d (shard %d), want shard %d", s.ID(), w.Seq, shard.OfSeq(w.Seq), want)
		}
		fresh = append(fresh, s.ID())
	}
	stopWriters()
	wg.Wait()
	for _, err := range writeErrs {
		t.Errorf("a writer of a session made before the migration: %v", err)
	}

	check := func(when string) {
		t.Helper()
		for _, sid := range append(append([]string(nil), old...), fresh...) {
			// Every read has every acknowledged entry. The nodes agree
			// once the writes in flight when the writers stopped have
			// landed: a writer's last append, cancelled by the test, may
			// still be stored after its reply was given up (CI saw one
			// land between two nodes' reads: lastSeq 877, then 884), and
			// a strong read reflects only what was stored before it.
			var lastSeq uint64
			testutil.WaitFor(t, readyTimeout, testutil.Awaiting(fmt.Sprintf("%s: the nodes agree on %s", when, sid), func() error {
				lastSeq = 0
				for _, nd := range nodes {
					got, err := readEntries(ctx, nd.base, sid)
					if err != nil {
						t.Fatalf("%s: %s reading %s: %v", when, nd.name, sid, err)
					}
					if miss := missing(got.ids, acked[sid]); len(miss) > 0 {
						t.Fatalf("%s: %s's copy of %s lacks %d acknowledged entries, first %s (holds %d, %d acknowledged)", when, nd.name, sid, len(miss), miss[0], len(got.ids), len(acked[sid]))
					}
					if lastSeq != 0 && got.lastSeq != lastSeq {
						return fmt.Errorf("lastSeq %d and %d", lastSeq, got.lastSeq)
					}
					lastSeq = got.lastSeq
				}
				return nil
			}))
			if k, want := shard.OfSeq(lastSeq), m.Of(sid); k != want {
				t.Fatalf("%s: session %s is at %d, on shard %d; the map says %d", when, sid, lastSeq, k, want)
			}
		}
	}
	check("after the migration")
	for _, sid := range old {
		got, err := readEntries(ctx, bases[0], sid)
		if err != nil || shard.OfSeq(got.lastSeq) != 0 {
			t.Fatalf("session %s, made before the migration: at %d (%v), want shard 0", sid, got.lastSeq, err)
		}
	}

	// A node started again takes the store's map (it has no --shards).
	nodes[1].Kill()
	nodes[1].Start(t)
	nodes[1].waitReady(t)
	check("after n2 was killed and started again")
	show, err := piCtlAdmin(t, "shards", "--server", nodes[0].natsURL)
	if err != nil || !strings.Contains(show, rep.Map) || !strings.Contains(show, "PI_SESSIONS_3") {
		t.Fatalf("pi-ctl shards: %v\n%s", err, show)
	}
	t.Logf("pi-ctl shards:\n%s", show)
}

// piCtlAdmin runs pi-ctl with args and returns its output.
func piCtlAdmin(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(piCtl(t), args...)
	cmd.Env = append(os.Environ(), "PI_CTL_SERVER=", "PI_CTL_HTTP=", "PI_CTL_TOKEN=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

type entriesRead struct {
	lastSeq uint64
	ids     []string
}

// readEntries reads session sid's entries from one node, linearizably
// (consistency=strong): whatever any node acknowledged before; retried
// while the node answers 503 (no stream leader yet) or 504.
func readEntries(ctx context.Context, base, sid string) (entriesRead, error) {
	var st int
	var body []byte
	var err error
	for attempt := 0; ; attempt++ {
		st, _, body, err = proctest.Do(ctx, proctest.ProbeClient, http.MethodGet, base+"/v1/sessions/"+sid+"/entries?limit=1000&consistency=strong", nil)
		if !retryable(st, err) || ctx.Err() != nil {
			break
		}
		proctest.Backoff(ctx, attempt, 1) // a stream electing its leader after the kill: 503 until it has one
	}
	if err != nil {
		return entriesRead{}, err
	}
	if st != http.StatusOK {
		return entriesRead{}, fmt.Errorf("%d: %s", st, body)
	}
	var page struct {
		LastSeq uint64 `json:"lastSeq"`
		Entries []struct {
			Entry struct {
				ID string `json:"id"`
			} `json:"entry"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return entriesRead{}, err
	}
	out := entriesRead{lastSeq: page.LastSeq}
	for _, e := range page.Entries {
		out.ids = append(out.ids, e.Entry.ID)
	}
	return out, nil
}

// missing lists the ids of want that have lacks.
func missing(have, want []string) []string {
	set := make(map[string]bool, len(have))
	for _, id := range have {
		set[id] = true
	}
	var out []string
	for _, id := range want {
		if !set[id] {
			out = append(out, id)
		}
	}
	return out
}
