//go:build linux

package jepsen

import (
	"strings"
	"testing"
	"time"
)

// hist builds small histories by hand; times are in milliseconds.
type hist struct{ ops []*Op }

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func (h *hist) add(op *Op) *Op {
	op.ID = len(h.ops)
	h.ops = append(h.ops, op)
	return op
}

func (h *hist) create(sid string, seq uint64) *Op {
	return h.add(&Op{Kind: KindCreate, Session: sid, Node: "n1", Transport: "http", Invoke: 0, Complete: ms(1), Outcome: OK, Seq: seq})
}

// app is an acknowledged append (or, with out, another outcome).
func (h *hist) app(client int, node, sid, id string, inv, comp int, out Outcome, seq uint64) *Op {
	return h.add(&Op{Client: client, Kind: KindAppend, Session: sid, Node: node, Transport: "http", Entry: id,
		Invoke: ms(inv), Complete: ms(comp), Outcome: out, Seq: seq})
}

func (h *hist) cas(client int, node, sid, id string, expect uint64, inv, comp int, out Outcome, seq uint64) *Op {
	op := h.app(client, node, sid, id, inv, comp, out, seq)
	op.Expect = &expect
	op.Conflict = out == Fail
	return op
}

func (h *hist) read(client int, node, sid string, inv, comp int, es ...Entry) *Op {
	return h.add(&Op{Client: client, Kind: KindRead, Read: "entries", Session: sid, Node: node, Transport: "http",
		Invoke: ms(inv), Complete: ms(comp), Outcome: OK, Entries: es})
}

func u64(v uint64) *uint64 { return &v }

func e(id string, seq uint64) Entry { return Entry{ID: id, Seq: seq} }

// same gives every node the same final logs.
func same(logs map[string][]Entry) map[string]map[string][]Entry {
	return map[string]map[string][]Entry{"n1": logs, "n2": logs, "n3": logs}
}

var nodes3 = []string{"n1", "n2", "n3"}

// base is a clean history of session s: header at 1, a@2 by n1, b@3 by n2
// (conditional), a conflicting conditional append, c landed after an
// indeterminate answer, and reads that respect every check.
func base() (*hist, map[string][]Entry) {
	h := &hist{}
	h.create("s", 1)
	h.app(1, "n1", "s", "a", 10, 20, OK, 2)
	h.cas(2, "n2", "s", "b", 2, 30, 40, OK, 3)
	h.cas(3, "n3", "s", "x", 2, 45, 50, Fail, 0) // stale expectation: 409
	h.app(3, "n3", "s", "c", 55, 90, Unknown, 0)
	r := h.read(1, "n1", "s", 60, 61, e("a", 2), e("b", 3))
	r.Applied, r.Lag = u64(3), u64(0)
	h.read(1, "n1", "s", 70, 71, e("a", 2), e("b", 3)) // the same client again: not behind
	s := h.read(2, "n2", "s", 100, 101, e("a", 2), e("b", 3), e("c", 4))
	s.Strong, s.MinSeq = true, 3
	return h, map[string][]Entry{"s": {e("a", 2), e("b", 3), e("c", 4)}}
}

// TestCheckerAcceptsCleanHistory: nothing flagged, and the checks did look.
func TestCheckerAcceptsCleanHistory(t *testing.T) {
	h, final := base()
	rep := check(h.ops, nodes3, same(final), 10*time.Second)
	for _, c := range rep.Checks {
		for _, v := range c.Violations {
			t.Errorf("%s: %s", c.Name, v)
		}
		if c.Count == 0 {
			t.Errorf("%s examined nothing", c.Name)
		}
	}
}

// TestCheckerFlagsViolations: each handmade history breaks one rule, and
// the check for that rule must say so (a checker that cannot fail is
// worthless).
func TestCheckerFlagsViolations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check string
		want  string // in the violation's text
		make  func() ([]*Op, map[string]map[string][]Entry)
	}{
		{"acked entry missing", checkLost, "lost", func() ([]*Op, map[string]map[string][]Entry) {
			h, _ := base()
			return h.ops, same(map[string][]Entry{"s": {e("b", 3), e("c", 4)}})
		}},
		{"acked entry at another seq", checkLost, "moved", func() ([]*Op, map[string]map[string][]Entry) {
			h, _ := base()
			return h.ops, same(map[string][]Entry{"s": {e("a", 5), e("b", 3), e("c", 4)}})
		}},
		{"entry twice", checkDuplicated, "twice", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			final["s"] = append(final["s"], e("a", 7))
			return h.ops, same(final)
		}},
		{"nodes disagree", checkFinalAgree, "differs", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			f := same(final)
			f["n3"] = map[string][]Entry{"s": final["s"][:2]}
			return h.ops, f
		}},
		{"later append lower seq", checkRealtimeOrder, "real-time", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			h.app(4, "n1", "s", "d", 200, 210, OK, 9)
			h.app(5, "n2", "s", "f", 220, 230, OK, 8)
			final["s"] = append(final["s"], e("f", 8), e("d", 9))
			return h.ops, same(final)
		}},
		{"read with a gap", checkReadPrefix, "not a prefix", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			h.read(4, "n3", "s", 200, 201, e("a", 2), e("c", 4))
			return h.ops, same(final)
		}},
		{"read of an entry the log lacks", checkReadPrefix, "not a prefix", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			h.read(4, "n3", "s", 200, 201, e("a", 2), e("b", 3), e("c", 4), e("ghost", 5))
			return h.ops, same(final)
		}},
		{"own node forgets its ack", checkRYWNode, "misses", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			h.read(4, "n1", "s", 25, 26) // a was acked by n1 at 20
			return h.ops, same(final)
		}},
		{"NATS: the answering node forgets its ack", checkRYWNode, "answered by n1", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			r := h.read(4, "n2", "s", 25, 26) // a was acked by n1 at 20
			r.Transport, r.Served = "nats", "n1"
			return h.ops, same(final)
		}},
		{"minSeq not honoured", checkRYWMinSeq, "minSeq 3", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			r := h.read(4, "n3", "s", 200, 201, e("a", 2))
			r.MinSeq = 3
			return h.ops, same(final)
		}},
		{"applied seq claims more than the data", checkAppliedSeq, "Pi-Applied-Seq 4", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			r := h.read(4, "n3", "s", 200, 201, e("a", 2), e("b", 3))
			r.Applied = u64(4)
			return h.ops, same(final)
		}},
		{"409 in the log", checkRejectedAbsent, "took effect", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			final["s"] = append(final["s"], e("x", 5))
			return h.ops, same(final)
		}},
		{"lag 0 yet behind its own ack", checkHonestLag, "Pi-Lag 0", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			r := h.read(4, "n2", "s", 45, 46, e("a", 2)) // b acked by n2 at 40
			r.Lag = u64(0)
			return h.ops, same(final)
		}},
		{"lag 0 yet behind another node by more than the window", checkHonestLag, "Pi-Lag 0", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			r := h.read(4, "n3", "s", 40+int(lagWindow/time.Millisecond), 2000, e("a", 2)) // b acked by n2 at 40
			r.Lag = u64(0)
			return h.ops, same(final)
		}},
		{"a node goes back", checkMonotonic, "previous read there 2", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			h.read(1, "n1", "s", 80, 81, e("a", 2)) // client 1 saw a and b on n1 at 70
			return h.ops, same(final)
		}},
		{"conflict without a concurrent write", checkLinearizable, "not linearizable", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			h.cas(4, "n1", "s", "y", 4, 200, 210, Fail, 0) // the log is at 4
			return h.ops, same(final)
		}},
		{"two conditional appends on one expectation", checkLinearizable, "not linearizable", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			h.cas(4, "n1", "s", "d", 4, 200, 210, OK, 5)
			h.cas(5, "n2", "s", "f", 4, 205, 215, OK, 6)
			final["s"] = append(final["s"], e("d", 5), e("f", 6))
			return h.ops, same(final)
		}},
		{"stale strong read", checkLinearizable, "not linearizable", func() ([]*Op, map[string]map[string][]Entry) {
			h, final := base()
			r := h.read(4, "n3", "s", 200, 201, e("a", 2), e("b", 3)) // c landed before 90
			r.Strong = true
			return h.ops, same(final)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, final := tc.make()
			rep := check(ops, nodes3, final, 10*time.Second)
			got := rep.get(tc.check)
			if len(got.Violations) == 0 {
				t.Fatalf("%s: no violation flagged", tc.check)
			}
			if !strings.Contains(strings.Join(got.Violations, "\n"), tc.want) {
				t.Errorf("%s: violations do not mention %q:\n%s", tc.check, tc.want, strings.Join(got.Violations, "\n"))
			}
			for _, v := range got.Violations {
				t.Logf("%s: %s", tc.check, v)
			}
		})
	}
}

// TestCheckerNegatives: what the rules allow is not flagged.
func TestCheckerNegatives(t *testing.T) {
	h, final := base()
	// A read on another node than the ack's, without headers: may be stale.
	h.read(4, "n3", "s", 25, 26)
	// The same over NATS: the client is connected to n1's server (which
	// acknowledged a), but n2 answered.
	r0 := h.read(4, "n1", "s", 25, 26)
	r0.Transport, r0.Served = "nats", "n2"

	// A stale read reporting Pi-Lag 0 but Pi-Stale: it said so.
	r := h.read(4, "n3", "s", 45, 46, e("a", 2))
	r.Lag, r.Stale = u64(0), true
	// Pi-Lag 0 on n3 within the window after n2 acknowledged b (at 40):
	// n3 may not have polled the log's end since.
	r = h.read(4, "n3", "s", 45, 46, e("a", 2))
	r.Lag = u64(0)
	// A plain (not strong) read may be stale.
	h.read(4, "n3", "s", 200, 201, e("a", 2))
	// Client 1 moves from n1 (it saw a and b at 70) to n3, which is behind.
	h.read(1, "n3", "s", 210, 211, e("a", 2))
	// A conditional append that lost to a concurrent one (b, 30..40).
	h.cas(5, "n1", "s", "z", 2, 35, 42, Fail, 0)
	// An indeterminate append that never landed.
	h.app(6, "n2", "s", "w", 300, 400, Unknown, 0)
	rep := check(h.ops, nodes3, same(final), 10*time.Second)
	for _, c := range rep.Checks {
		for _, v := range c.Violations {
			t.Errorf("%s: %s", c.Name, v)
		}
	}
}
