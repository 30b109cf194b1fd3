//go:build linux

package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// procFigures are a process's resident memory (now and at its peak) and
// CPU time so far.
type procFigures struct {
	rssKiB, hwmKiB int64
	cpu            time.Duration
}

// readProc reads pid's VmRSS, VmHWM and utime+stime from /proc.
func readProc(t testing.TB, pid int) procFigures {
	t.Helper()
	var out procFigures
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			out.rssKiB, _ = strconv.ParseInt(f[1], 10, 64)
		case "VmHWM:":
			out.hwmKiB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command's closing parenthesis: utime is the 12th
	// of them, stime the 13th, in clock ticks (100 a second on Linux).
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ut, _ := strconv.ParseInt(rest[11], 10, 64)
	st, _ := strconv.ParseInt(rest[12], 10, 64)
	out.cpu = time.Duration(ut+st) * 10 * time.Millisecond
	return out
}

// TestHoldShareCost measures what a node's share costs: three nodes, six
// shards, the same sessions written with --hold 3 (every node holds all)
// and then --hold 2. The sessions and JSON bytes a node holds must fall to
// about two thirds; its RSS and CPU (pi-node with its embedded server, over
// the writes and the catch-up) are reported beside them. At this size the
// server and the HTTP path are most of a node: BenchmarkHoldShare measures
// what a share saves where the Stores dominate.
func TestHoldShareCost(t *testing.T) {
	skipShort(t)
	t.Parallel()
	if testShards() > 1 {
		t.Skipf("starts its own store of 6 shards; PI_NODE_SHARDS=%d would give every node another count", testShards())
	}
	const sessions, entries, batch = 120, 50, 10
	type result struct {
		sessions, bytes int64
		rss             int64
		cpu             time.Duration
	}
	run := func(hold int) result {
		nodes := startEmbeddedClusterWith(t, 3, "--shards", "6", "--hold", strconv.Itoa(hold))
		defer func() {
			for _, nd := range nodes {
				nd.Kill()
			}
		}()
		heldByExactly(t, nodes, 6, hold, readyTimeout)
		before := make([]procFigures, len(nodes))
		for i, nd := range nodes {
			before[i] = readProc(t, nd.Pid())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		bases := []string{nodes[0].base, nodes[1].base, nodes[2].base}
		text := strings.Repeat("x", 900) // about 1 KB an entry
		for s := range sessions {
			sid := testutil.SessionID(t)
			if _, err := createSession(ctx, proctest.ProbeClient, bases, s, sid, "/work/cost", time.Now()); err != nil {
				t.Fatal(err)
			}
			parent := ""
			for j := 0; j < entries; j += batch {
				var es []proctest.Entry
				for i := j; i < j+batch; i++ {
					e := proctest.NewEntry(fmt.Sprintf("c%03d%03d", s, i), parent, text, time.Now())
					es, parent = append(es, e), e.ID
				}
				if _, err := appendRetry(ctx, proctest.ProbeClient, bases, s+j, sid, es...); err != nil {
					t.Fatal(err)
				}
			}
		}
		waitAllApplied(t, nodes)
		var r result
		for i, nd := range nodes {
			var st struct {
				Store struct {
					Sessions  int64 `json:"sessions"`
					BytesHeld int64 `json:"bytesHeld"`
				} `json:"store"`
			}
			if err := proctest.GetJSON(nd.base+"/v1/status", &st); err != nil {
				t.Fatal(err)
			}
			after := readProc(t, nd.Pid())
			r.sessions += st.Store.Sessions
			r.bytes += st.Store.BytesHeld
			r.rss += after.rssKiB
			r.cpu += after.cpu - before[i].cpu
		}
		n := int64(len(nodes))
		return result{r.sessions / n, r.bytes / n, r.rss / n, r.cpu / time.Duration(n)}
	}
	all := run(3)
	share := run(2)
	t.Logf("MEASURED hold cost, 3 nodes, 6 shards, %d sessions of %d 1 KB entries, per node: --hold 3: %d sessions, %d KB JSON held, RSS %d MiB, CPU %v; --hold 2: %d sessions (%.2f×), %d KB (%.2f×), RSS %d MiB (%.2f×), CPU %v (%.2f×)",
		sessions, entries, all.sessions, all.bytes>>10, all.rss>>10, all.cpu.Round(10*time.Millisecond),
		share.sessions, float64(share.sessions)/float64(all.sessions), share.bytes>>10, float64(share.bytes)/float64(all.bytes),
		share.rss>>10, float64(share.rss)/float64(all.rss), share.cpu.Round(10*time.Millisecond), float64(share.cpu)/float64(all.cpu))
	if all.sessions != sessions {
		t.Fatalf("--hold 3: a node holds %d sessions, want all %d", all.sessions, sessions)
	}
	// Two of three nodes hold each session: two thirds on average.
	if want := int64(sessions * 2 / 3); share.sessions != want {
		t.Fatalf("--hold 2: a node holds %d sessions on average, want %d", share.sessions, want)
	}
	if share.bytes >= all.bytes {
		t.Fatalf("--hold 2: a node holds %d bytes, not less than %d with --hold 3", share.bytes, all.bytes)
	}
}
