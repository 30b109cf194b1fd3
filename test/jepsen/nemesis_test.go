//go:build linux

package jepsen

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The faults, by the names the figures use.
const (
	faultKillLeader   = "kill-leader"
	faultKillFollower = "kill-follower"
	faultPause        = "pause"
	faultPartition    = "partition"
)

var faults = []string{faultKillLeader, faultKillFollower, faultPause, faultPartition}

// How long each fault lasts. A partition outlasts JetStream's election
// timeouts, so that a cut-off leader is replaced while it is away.
const (
	killHold      = 3 * time.Second
	pauseHold     = 4 * time.Second
	partitionHold = 6 * time.Second
	quiet         = 2 * time.Second // between faults
	warmup        = 3 * time.Second
)

// hold is how long each fault lasts, for the schedule.
var hold = map[string]time.Duration{
	faultKillLeader: killHold, faultKillFollower: killHold, faultPause: pauseHold, faultPartition: partitionHold,
}

// nemesis injects faults into the cluster from the test's goroutine.
type nemesis struct {
	t        *testing.T
	nodes    []*piNode
	net      *network
	rng      *rand.Rand
	rec      *recorder
	injected map[string]int
	skipped  map[string]string // fault -> why
	problems []string          // recoveries that did not happen in time
}

func (n *nemesis) logf(format string, args ...any) {
	n.t.Logf("nemesis at %v: %s", n.rec.now().Round(10*time.Millisecond), fmt.Sprintf(format, args...))
}

// run injects faults, one at a time, each kind once before any repeats
// (in an order drawn from the seed), while the run has time left for the
// next one.
func (n *nemesis) run(until time.Time) {
	sleepUntil(time.Now().Add(warmup), until)
	order := n.rng.Perm(len(faults))
	for i := 0; ; i++ {
		if i > 0 && i%len(faults) == 0 {
			order = n.rng.Perm(len(faults))
		}
		f := faults[order[i%len(faults)]]
		if time.Until(until) < hold[f]+quiet {
			return
		}
		if err := n.inject(f); err != nil {
			n.logf("%s skipped: %v", f, err)
			if _, ok := n.skipped[f]; !ok {
				n.skipped[f] = err.Error()
			}
			continue
		}
		n.injected[f]++
		n.awaitRecovery()
		sleepUntil(time.Now().Add(quiet), until)
	}
}

// sleepUntil sleeps until t, or until the end of the run if sooner: the
// nemesis's schedule, not a wait for a condition.
func sleepUntil(t, end time.Time) {
	if t.After(end) {
		t = end
	}
	time.Sleep(time.Until(t))
}

func (n *nemesis) inject(f string) error {
	switch f {
	case faultKillLeader:
		l, err := leader(n.nodes)
		if err != nil {
			return err
		}
		return n.kill(l, "stream leader")
	case faultKillFollower:
		l, err := leader(n.nodes)
		if err != nil {
			return err
		}
		var fs []*piNode
		for _, nd := range n.nodes {
			if nd != l {
				fs = append(fs, nd)
			}
		}
		return n.kill(fs[n.rng.IntN(len(fs))], "follower")
	case faultPause:
		nd := n.nodes[n.rng.IntN(len(n.nodes))]
		role := n.role(nd) // before: a paused node cannot answer status
		if err := nd.Send(syscall.SIGSTOP); err != nil {
			return err
		}
		n.logf("SIGSTOP %s%s for %v", nd.name, role, pauseHold)
		time.Sleep(pauseHold)
		if err := nd.Send(syscall.SIGCONT); err != nil {
			n.t.Errorf("SIGCONT %s: %v", nd.name, err)
		}
		n.logf("SIGCONT %s", nd.name)
		return nil
	case faultPartition:
		nd := n.nodes[n.rng.IntN(len(n.nodes))]
		if l, err := leader(n.nodes); err == nil && n.rng.IntN(2) == 0 {
			nd = l // half the time the leader: the interesting case
		}
		role := n.role(nd)
		how, err := n.net.cut(nd.idx)
		if err != nil {
			_ = n.net.heal(nd.idx)
			return err
		}
		n.logf("cut %s%s off the other nodes for %v: %s", nd.name, role, partitionHold, how)
		time.Sleep(partitionHold)
		if err := n.net.heal(nd.idx); err != nil {
			n.t.Errorf("heal %s: %v", nd.name, err)
		}
		n.logf("healed %s", nd.name)
		return nil
	}
	return fmt.Errorf("unknown fault %q", f)
}

// role says whether nd leads the stream, for the timeline.
func (n *nemesis) role(nd *piNode) string {
	if l, err := leader(n.nodes); err == nil && l == nd {
		return " (stream leader)"
	}
	return ""
}

// kill sends SIGKILL, waits, and restarts the node on its data dir.
func (n *nemesis) kill(nd *piNode, role string) error {
	nd.Kill()
	n.logf("kill -9 %s (%s), restart in %v", nd.name, role, killHold)
	time.Sleep(killHold)
	nd.Start(n.t)
	n.logf("restarted %s", nd.name)
	return nil
}

// awaitRecovery waits for every node to be ready again; one that is not
// within the bound is recorded as a problem (and fails the test), and
// the run goes on.
func (n *nemesis) awaitRecovery() {
	for _, nd := range n.nodes {
		d, err := nd.waitReady(readyTimeout)
		if err != nil {
			n.problems = append(n.problems, err.Error())
			n.t.Errorf("after a fault: %v", err)
			continue
		}
		if d > time.Second {
			n.logf("%s ready again after %v", nd.name, d.Round(10*time.Millisecond))
		}
	}
}

// healAll undoes whatever may still be in effect (a test that stopped
// half-way through a fault) before the final reads.
func (n *nemesis) healAll() {
	for _, nd := range n.nodes {
		_ = n.net.heal(nd.idx)
		if nd.Running() {
			_ = nd.Send(syscall.SIGCONT)
		} else {
			n.logf("%s not running at the end (%v): restarting it", nd.name, nd.ExitErr())
			nd.Start(n.t)
		}
	}
}

// summary is the faults line of the figures.
func (n *nemesis) summary() string {
	var parts []string
	for _, f := range faults {
		parts = append(parts, fmt.Sprintf("%s=%d", f, n.injected[f]))
	}
	s := strings.Join(parts, " ")
	for _, f := range faults {
		if why, ok := n.skipped[f]; ok {
			s += fmt.Sprintf("; %s skipped: %s", f, why)
		}
	}
	return s
}
