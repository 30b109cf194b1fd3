package tree

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestIDIndex: the index answers as a map from id to newest entry does,
// through growth, repeated ids, ids never added, and a Grow beforehand.
func TestIDIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, pregrow := range []int{0, 5000} {
		var x idIndex
		var entries []Entry
		x.grow(entries, pregrow)
		model := map[string]int32{}
		for i := range int32(20000) {
			id := fmt.Sprintf("%08x", r.IntN(15000)) // a quarter repeat
			entries = append(entries, Entry{ID: id})
			old, had := x.put(entries, id, i)
			if want, ok := model[id]; had != ok || had && old != want {
				t.Fatalf("put %s: old %d, %v; want %d, %v", id, old, had, want, ok)
			}
			model[id] = i
		}
		if x.n != len(model) {
			t.Fatalf("%d ids held, want %d", x.n, len(model))
		}
		for id, want := range model {
			if got, ok := x.get(entries, id); !ok || got != want {
				t.Fatalf("get %s: %d, %v; want %d", id, got, ok, want)
			}
		}
		for range 1000 {
			id := fmt.Sprintf("x%07x", r.IntN(1<<24))
			if _, ok := x.get(entries, id); ok {
				t.Fatalf("get %s: found, never added", id)
			}
		}
	}
	var empty idIndex
	if _, ok := empty.get(nil, "a"); ok {
		t.Fatal("an empty index finds an id")
	}
}
