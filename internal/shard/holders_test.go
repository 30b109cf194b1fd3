package shard

import (
	"fmt"
	"slices"
	"testing"
)

func TestHolders(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4", "n5"}
	// Every node computes the same holders whatever order it lists them in.
	for k := range 6 {
		a := Holders(k, nodes, 2)
		rev := slices.Clone(nodes)
		slices.Reverse(rev)
		if b := Holders(k, rev, 2); !slices.Equal(a, b) {
			t.Fatalf("shard %d: %v from one order, %v from another", k, a, b)
		}
		if len(a) != 2 || a[0] == a[1] {
			t.Fatalf("shard %d: holders %v", k, a)
		}
	}
	if got := Holders(3, nodes, 0); len(got) != 5 {
		t.Fatalf("h=0: %v, want every node", got)
	}
	if got := Holders(3, nodes[:1], 2); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("one node, h=2: %v", got)
	}
	if got := Holders(3, nil, 2); len(got) != 0 {
		t.Fatalf("no nodes: %v", got)
	}
}

// A node joining or leaving moves only the shards it gains or held, and
// the load spreads: with 64 shards over 5 nodes at h=2 each holds 128/5.
func TestHoldersMoveLittle(t *testing.T) {
	const shards, h = 64, 2
	nodes := []string{"pi-node-0", "pi-node-1", "pi-node-2", "pi-node-3", "pi-node-4"}
	before := map[int][]string{}
	count := map[string]int{}
	for k := range shards {
		before[k] = Holders(k, nodes, h)
		for _, n := range before[k] {
			count[n]++
		}
	}
	for _, n := range nodes {
		if c := count[n]; c < 15 || c > 36 {
			t.Errorf("%s holds %d of %d shard copies; want about %d", n, c, shards*h, shards*h/len(nodes))
		}
	}
	// pi-node-2 leaves: a shard it did not hold keeps both holders.
	left := slices.Delete(slices.Clone(nodes), 2, 3)
	for k := range shards {
		after := Holders(k, left, h)
		if !slices.Contains(before[k], "pi-node-2") && !slices.Equal(before[k], after) {
			t.Errorf("shard %d moved from %v to %v though its holders stayed", k, before[k], after)
		}
		for _, n := range before[k] {
			if n != "pi-node-2" && !slices.Contains(after, n) {
				t.Errorf("shard %d: %s lost it when pi-node-2 left (%v → %v)", k, n, before[k], after)
			}
		}
	}
	// A sixth node joins: it takes shards, nobody else gains any.
	joined := append(slices.Clone(nodes), "pi-node-5")
	gained := 0
	for k := range shards {
		after := Holders(k, joined, h)
		for _, n := range after {
			if !slices.Contains(before[k], n) {
				if n != "pi-node-5" {
					t.Errorf("shard %d: %s gained it when pi-node-5 joined", k, n)
				}
				gained++
			}
		}
	}
	if gained < 10 || gained > 33 {
		t.Errorf("the new node took %d shard copies; want about %d", gained, shards*h/len(joined))
	}
}

// The weights are pinned: a change would move every shard of every
// deployment at its next rolling update, so it must be deliberate.
func TestHoldWeightPinned(t *testing.T) {
	got := fmt.Sprintf("%016x %016x %016x", HoldWeight("n1", 0), HoldWeight("n1", 1), HoldWeight("pi-node-2", 5))
	want := "cf69f8e8dc57b938 e4661753e4772705 48df654d868e2a63" // worked out in Python from the definition
	if got != want {
		t.Fatalf("HoldWeight = %s, want %s", got, want)
	}
}
