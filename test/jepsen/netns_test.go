//go:build linux

package jepsen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// netPrefix names everything this suite creates in the host's network
// stack, so that leftovers of a killed run are recognizable.
const netPrefix = "pjep"

// network is where the nodes listen: a namespace each on a private bridge,
// or (namespaces unavailable) loopback, which cannot be partitioned.
type network struct {
	ns     bool
	reason string // why there are no namespaces
	tag    string // netPrefix plus a random suffix
	subnet string // "10.x.y": the host is .1, node i (0-based) .11+i
	// iptables works inside a node's namespace: a cut drops the peers'
	// packets only, and the node still serves its clients. Without it a
	// cut takes the node's link down, clients included.
	iptables bool
	nodes    int
}

// run runs a command (ip, mostly) with a timeout and returns its error
// with its output.
func run(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// output runs a command and returns its standard output, empty on failure.
func output(name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, name, args...).Output()
	return string(out)
}

func (n *network) hub() string         { return n.tag + "-hub" }
func (n *network) nodeNS(i int) string { return fmt.Sprintf("%s-n%d", n.tag, i+1) }
func (n *network) hostLink() string    { return n.tag + "-h" }

// addr is node i's address.
func (n *network) addr(i int) string {
	if !n.ns {
		return "127.0.0.1"
	}
	return fmt.Sprintf("%s.%d", n.subnet, 11+i)
}

// command returns how to run bin for node i: inside its namespace when
// there are namespaces (ip netns exec execs bin in place, so the process,
// its group and its parent-death signal stay those proctest set up).
func (n *network) command(i int, bin string, args ...string) (string, []string) {
	if !n.ns {
		return bin, args
	}
	return "ip", append([]string{"netns", "exec", n.nodeNS(i), bin}, args...)
}

// newNetwork makes a namespace per node, joined by a bridge in a hub
// namespace and reachable from the host through a veth into that bridge.
// The bridge is not in the host's namespace so that the host's firewall
// (Docker's FORWARD DROP, with bridge netfilter on) never filters the
// traffic between nodes. On any failure it cleans up and falls back to
// loopback, saying why.
func newNetwork(t *testing.T, nodes int, rng *rand.Rand) *network {
	t.Helper()
	n := &network{nodes: nodes}
	if os.Getenv("JEPSEN_NO_NETNS") != "" {
		n.reason = "JEPSEN_NO_NETNS is set"
		return n
	}
	if os.Geteuid() != 0 {
		n.reason = "not root"
		return n
	}
	if _, err := exec.LookPath("ip"); err != nil {
		n.reason = "no ip(8): " + err.Error()
		return n
	}
	removeStale(t)
	n.tag = fmt.Sprintf("%s%04x", netPrefix, rng.IntN(1<<16))
	n.subnet = freeSubnet(rng)
	if n.subnet == "" {
		n.reason = "no free 10.x.y.0/24 subnet found"
		return n
	}
	// Registered before anything is made: cleanup runs even when a step
	// below fails, and after the processes' own cleanups (LIFO), which
	// kill them first.
	t.Cleanup(n.remove)
	n.ns = true // addr gives namespace addresses from here on
	if err := n.build(); err != nil {
		n.remove()
		n.ns, n.reason = false, err.Error()
		return n
	}
	if err := run("ip", "netns", "exec", n.nodeNS(0), "iptables", "-w", "5", "-S"); err == nil {
		n.iptables = true
	}
	return n
}

func (n *network) build() error {
	hub, host := n.hub(), n.hostLink()
	steps := [][]string{
		{"netns", "add", hub},
		{"-n", hub, "link", "set", "lo", "up"},
		{"-n", hub, "link", "add", "br0", "type", "bridge"},
		{"-n", hub, "link", "set", "br0", "up"},
		{"link", "add", host, "type", "veth", "peer", "name", "uplink", "netns", hub},
		{"-n", hub, "link", "set", "uplink", "master", "br0", "up"},
		{"addr", "add", n.subnet + ".1/24", "dev", host},
		{"link", "set", host, "up"},
	}
	for i := range n.nodes {
		ns, v := n.nodeNS(i), fmt.Sprintf("v%d", i+1)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"-n", hub, "link", "add", v, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"-n", hub, "link", "set", v, "master", "br0", "up"},
			[]string{"-n", ns, "addr", "add", n.addr(i) + "/24", "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
		)
	}
	for _, s := range steps {
		if err := run("ip", s...); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes what build made; deleting a namespace deletes the veth
// ends in it, and with them their peers.
func (n *network) remove() {
	for i := range n.nodes {
		_ = run("ip", "netns", "del", n.nodeNS(i))
	}
	_ = run("ip", "netns", "del", n.hub())
	_ = run("ip", "link", "del", n.hostLink()) // gone with the hub, normally
}

// removeStale deletes namespaces of earlier runs that no process uses any
// more (a run killed before its cleanup).
func removeStale(t *testing.T) {
	for _, line := range strings.Split(output("ip", "netns", "list"), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], netPrefix) {
			continue
		}
		if strings.TrimSpace(output("ip", "netns", "pids", f[0])) != "" {
			continue
		}
		t.Logf("removing network namespace %s left by an earlier run", f[0])
		_ = run("ip", "netns", "del", f[0])
	}
}

// freeSubnet picks a 10.x.y.0/24 no address or route of the host uses.
func freeSubnet(rng *rand.Rand) string {
	used := output("ip", "-4", "-o", "addr") + output("ip", "-4", "route")
	for range 20 {
		s := fmt.Sprintf("10.%d.%d", 200+rng.IntN(50), rng.IntN(256))
		if !strings.Contains(used, s+".") {
			return s
		}
	}
	return ""
}

// cut isolates node i from the other nodes.
func (n *network) cut(i int) (string, error) {
	if !n.ns {
		return "", fmt.Errorf("no namespaces (%s)", n.reason)
	}
	ns := n.nodeNS(i)
	if !n.iptables {
		return "link down (no iptables in the namespace: clients are cut off too)", run("ip", "-n", ns, "link", "set", "eth0", "down")
	}
	for j := range n.nodes {
		if j == i {
			continue
		}
		peer := n.addr(j)
		if err := run("ip", "netns", "exec", ns, "iptables", "-w", "5", "-A", "INPUT", "-s", peer, "-j", "DROP"); err != nil {
			return "", err
		}
		if err := run("ip", "netns", "exec", ns, "iptables", "-w", "5", "-A", "OUTPUT", "-d", peer, "-j", "DROP"); err != nil {
			return "", err
		}
	}
	return "iptables DROP of its peers (clients still reach it)", nil
}

// heal undoes cut.
func (n *network) heal(i int) error {
	if !n.ns {
		return nil
	}
	ns := n.nodeNS(i)
	if !n.iptables {
		return run("ip", "-n", ns, "link", "set", "eth0", "up")
	}
	if err := run("ip", "netns", "exec", ns, "iptables", "-w", "5", "-F", "INPUT"); err != nil {
		return err
	}
	return run("ip", "netns", "exec", ns, "iptables", "-w", "5", "-F", "OUTPUT")
}
