package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// diagFlags make a node's embedded server serve its monitoring endpoints,
// and the node its Go profiles, on loopback ports of their own choosing
// (the ready line names them): what reportRaftOnFailure reads.
var diagFlags = []string{"--monitor-listen=127.0.0.1:0", "--pprof-listen=127.0.0.1:0"}

var (
	monitorRe = regexp.MustCompile(`msg="pi-node ready".* monitor=(\S+)`)
	pprofRe   = regexp.MustCompile(`msg="pi-node ready".* pprof=(\S+)`)
)

// readyAddr is the address re finds in nd's last ready line, "" without.
func (nd *piNode) readyAddr(re *regexp.Regexp) string {
	out, err := nd.Output()
	if err != nil {
		return ""
	}
	m := re.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}

// reportRaftOnFailure logs, if the test fails, what each node's embedded
// server says of the session streams' Raft groups and of its routes
// (/jsz, /raftz, /routez), and where the node's Stores and their follows
// wait (its goroutines): a Store that applied nothing for a minute while
// its stream had a leader and its replica was current leaves the Stores'
// own status without an explanation (docs/TESTING.md, TestKillStreamLeader
// over 4 shards). Each node must run with diagFlags. Registered before the
// nodes stop.
func reportRaftOnFailure(t *testing.T, nodes []*piNode) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, nd := range nodes {
			if !nd.Running() {
				continue
			}
			t.Logf("%s's server, at the failure:\n%s", nd.name, raftReport(nd))
			t.Logf("%s's goroutines in its Stores and follows, at the failure:\n%s", nd.name, followGoroutines(nd))
		}
	})
}

// raftReport is one line per session stream's Raft group as nd's server
// sees it, then one per route.
func raftReport(nd *piNode) string {
	addr := nd.readyAddr(monitorRe)
	if addr == "" {
		return "  no monitoring address in the log (started without diagFlags?)"
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	get := func(path string, v any) error {
		resp, err := hc.Get("http://" + addr + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(v)
	}
	var b strings.Builder
	var jsz struct {
		Accounts []struct {
			Name    string `json:"name"`
			Streams []struct {
				Name      string `json:"name"`
				RaftGroup string `json:"stream_raft_group"`
				Cluster   struct {
					Leader string `json:"leader"`
				} `json:"cluster"`
				State struct {
					LastSeq   uint64 `json:"last_seq"`
					Consumers int    `json:"consumer_count"`
				} `json:"state"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if err := get("/jsz?streams=true&raft=true", &jsz); err != nil {
		return "  /jsz: " + err.Error()
	}
	for _, acc := range jsz.Accounts {
		var raftz map[string]map[string]struct {
			State      string `json:"state"`
			Leader     string `json:"leader"`
			Term       uint64 `json:"term"`
			Committed  uint64 `json:"committed"`
			Applied    uint64 `json:"applied"`
			PIndex     uint64 `json:"pindex"`
			CatchingUp bool   `json:"catching_up"`
			Paused     bool   `json:"paused"`
			EntryQ     int    `json:"ipq_entry_len"`
			ApplyQ     int    `json:"ipq_apply_len"`
			Peers      map[string]struct {
				Name     string `json:"name"`
				Index    uint64 `json:"last_replicated_index"`
				LastSeen string `json:"last_seen"`
			} `json:"peers"`
		}
		if err := get("/raftz?acc="+url.QueryEscape(acc.Name), &raftz); err != nil {
			fmt.Fprintf(&b, "  /raftz of account %s: %v\n", acc.Name, err)
		}
		for _, s := range acc.Streams {
			if !strings.HasPrefix(s.Name, "PI_SESSIONS") {
				continue
			}
			fmt.Fprintf(&b, "  %s (%s): leader %q, last seq %d, %d consumers", s.Name, s.RaftGroup, s.Cluster.Leader, s.State.LastSeq, s.State.Consumers)
			for _, groups := range raftz {
				g, ok := groups[s.RaftGroup]
				if !ok {
					continue
				}
				leader := g.Leader // a peer id: its name when it is another's
				if p, ok := g.Peers[g.Leader]; ok {
					leader = p.Name
				} else if g.State == "LEADER" {
					leader = nd.name
				}
				fmt.Fprintf(&b, "; raft %s term %d leader %q committed %d applied %d pindex %d catching up %v paused %v queues entry %d apply %d; peers",
					g.State, g.Term, leader, g.Committed, g.Applied, g.PIndex, g.CatchingUp, g.Paused, g.EntryQ, g.ApplyQ)
				var peers []string
				for _, p := range g.Peers {
					seen := "never"
					if p.LastSeen != "" {
						seen = p.LastSeen + " ago"
					}
					peers = append(peers, fmt.Sprintf(" %s index %d seen %s", p.Name, p.Index, seen))
				}
				slices.Sort(peers)
				b.WriteString(strings.Join(peers, ","))
			}
			b.WriteString("\n")
		}
	}
	var routez struct {
		Routes []struct {
			RemoteName   string `json:"remote_name"`
			IP           string `json:"ip"`
			Port         int    `json:"port"`
			PendingBytes int    `json:"pending_size"`
			Idle         string `json:"idle"`
			InMsgs       int64  `json:"in_msgs"`
			OutMsgs      int64  `json:"out_msgs"`
		} `json:"routes"`
	}
	if err := get("/routez", &routez); err != nil {
		fmt.Fprintf(&b, "  /routez: %v\n", err)
		return b.String()
	}
	for _, r := range routez.Routes {
		fmt.Fprintf(&b, "  route to %s (%s:%d): pending %d bytes, idle %s, in %d out %d msgs\n",
			r.RemoteName, r.IP, r.Port, r.PendingBytes, r.Idle, r.InMsgs, r.OutMsgs)
	}
	return b.String()
}

// followGoroutines is nd's goroutines that run the Stores, their follows
// and the shards' logs, each as its header ("goroutine 12 [select, 2
// minutes]:") and its functions without files, the longest waiting first,
// at most 40.
func followGoroutines(nd *piNode) string {
	addr := nd.readyAddr(pprofRe)
	if addr == "" {
		return "  no profiling address in the log (started without diagFlags?)"
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get("http://" + addr + "/debug/pprof/goroutine?debug=2")
	if err != nil {
		return "  " + err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "  " + err.Error()
	}
	type g struct {
		wait  int // minutes waiting, from the header
		lines []string
	}
	var gs []g
	for _, block := range strings.Split(string(body), "\n\n") {
		if !strings.Contains(block, "sessionlog/internal/store.") && !strings.Contains(block, "sessionlog/internal/jetstream.") &&
			!strings.Contains(block, "sessionlog/internal/shard.") {
			continue
		}
		lines := strings.Split(block, "\n")
		x := g{lines: []string{"  " + lines[0]}}
		if m := minutesRe.FindStringSubmatch(lines[0]); m != nil {
			x.wait, _ = strconv.Atoi(m[1])
		}
		for _, l := range lines[1:] {
			if !strings.HasPrefix(l, "\t") { // a function, not its file:line
				x.lines = append(x.lines, "    "+l)
			}
		}
		gs = append(gs, x)
	}
	slices.SortStableFunc(gs, func(a, b g) int { return b.wait - a.wait })
	var b strings.Builder
	fmt.Fprintf(&b, "  %d goroutines\n", len(gs))
	for i, x := range gs {
		if i == 40 {
			b.WriteString("  …\n")
			break
		}
		b.WriteString(strings.Join(x.lines, "\n") + "\n")
	}
	return b.String()
}

var minutesRe = regexp.MustCompile(`, (\d+) minutes\]:`)
