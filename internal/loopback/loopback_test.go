package loopback

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestFreePorts: distinct ports, outside the ephemeral range when there is
// room below it, each bindable once returned.
func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := quietRange()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d returned twice in %v", p, ports)
		}
		seen[p] = true
		if hi > lo && (p < lo || p >= hi) {
			t.Errorf("port %d is outside [%d, %d)", p, lo, hi)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		ln.Close()
	}
}

// childEnv makes the test binary a second process that asks for ports
// from the same narrow range and prints them.
const childEnv = "LOOPBACK_TEST_CHILD_RANGE"

func TestMain(m *testing.M) {
	if r := os.Getenv(childEnv); r != "" {
		var lo, hi int
		fmt.Sscanf(r, "%d-%d", &lo, &hi)
		portRange = func() (int, int) { return lo, hi }
		ports, err := FreePorts(hi - lo - 20)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println(ports)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestFreePortsClaimed: a port is handed out once per process, even once
// free again, and never to another process while the first lives. The
// range is narrowed to 40 ports so that a second process (this binary
// again) drawing 20 of them would hit the first's 20 almost surely.
func TestFreePortsClaimed(t *testing.T) {
	lo := 0
	for base := 45000; base < 60000 && lo == 0; base += 100 { // 40 ports free now
		free := true
		for p := base; p < base+40 && free; p++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				free = false
				continue
			}
			ln.Close()
		}
		if free {
			lo = base
		}
	}
	if lo == 0 {
		t.Skip("no run of 40 free ports between 45000 and 60000")
	}
	hi := lo + 40
	old := portRange
	portRange = func() (int, int) { return lo, hi }
	t.Cleanup(func() { portRange = old })

	first, err := FreePorts(10)
	if err != nil {
		t.Fatal(err)
	}
	second, err := FreePorts(10) // the first ten are free again: not handed out twice
	if err != nil {
		t.Fatal(err)
	}
	mine := map[int]bool{}
	for _, p := range append(first, second...) {
		if mine[p] {
			t.Fatalf("port %d handed out twice in this process: %v %v", p, first, second)
		}
		mine[p] = true
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d-%d", childEnv, lo, hi))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the second process: %v: %s", err, out)
	}
	var theirs []int
	for _, f := range strings.Fields(strings.Trim(strings.TrimSpace(string(out)), "[]")) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("the second process printed %q", out)
		}
		theirs = append(theirs, p)
	}
	if len(theirs) != 20 {
		t.Fatalf("the second process got %d ports, want 20: %s", len(theirs), out)
	}
	for _, p := range theirs {
		if mine[p] {
			t.Errorf("port %d handed to a second process while this one holds it", p)
		}
	}
}
