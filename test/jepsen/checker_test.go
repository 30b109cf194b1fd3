//go:build linux

package jepsen

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The checks, in the order they are reported; doc.go defines each.
const (
	checkLost           = "lost"
	checkDuplicated     = "duplicated"
	checkFinalAgree     = "final-agree"
	checkRealtimeOrder  = "realtime-order"
	checkReadPrefix     = "read-prefix"
	checkRYWNode        = "ryw-node"
	checkRYWMinSeq      = "ryw-minseq"
	checkAppliedSeq     = "applied-seq"
	checkRejectedAbsent = "rejected-absent"
	checkHonestLag      = "honest-lag"
	checkLinearizable   = "linearizable"
	checkMonotonic      = "monotonic-reads"
)

// lagWindow: docs/API.md says a node polls the log's end every 250 ms, so
// a write another node acknowledged in the last ~250 ms may not count in
// its Pi-Lag yet. One second (also Pi-Stale's threshold) leaves room for
// polls delayed on a busy machine.
const lagWindow = time.Second

var allChecks = []string{
	checkLost, checkDuplicated, checkFinalAgree, checkRealtimeOrder, checkReadPrefix,
	checkRYWNode, checkRYWMinSeq, checkAppliedSeq, checkRejectedAbsent, checkHonestLag, checkMonotonic, checkLinearizable,
}

// checkResult is one check's verdict: how many things it examined, and
// what it found wrong.
type checkResult struct {
	Name       string
	Count      int
	Violations []string
	Note       string // e.g. a linearizability search that timed out
}

// report is the checker's verdict on a history.
type report struct {
	Checks []*checkResult
	// lagStrict counts the reads reporting Pi-Lag 0 without Pi-Stale that
	// miss an entry acknowledged by any node at any time before them: the
	// stricter reading of honest-lag, which the API does not promise (a
	// node learns of other nodes' writes by polling); a figure, not a check.
	lagStrict int
}

func (r *report) get(name string) *checkResult {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	c := &checkResult{Name: name}
	r.Checks = append(r.Checks, c)
	return c
}

func (c *checkResult) violate(format string, args ...any) {
	c.Violations = append(c.Violations, fmt.Sprintf(format, args...))
}

// finalEntry is where an entry is in a session's final log.
type finalEntry struct {
	pos int
	seq uint64
}

// checker holds the history and the final logs while the checks run.
type checker struct {
	ops []*Op
	// final is the reference final log of each session (the first node's);
	// finalAll has every node's.
	final    map[string][]Entry
	finalAll map[string]map[string][]Entry
	nodes    []string
	index    map[string]map[string]finalEntry // session -> entry id -> place
	rep      *report
	// linTimeout bounds porcupine's search per session.
	linTimeout time.Duration
	// lagWindow is how long another node's acknowledged write may stay
	// unknown to a node reporting Pi-Lag 0 (see honest-lag).
	lagWindow time.Duration
}

// check runs every check over ops and the final logs read from each node
// (nodes in order; the first is the reference the others must equal).
func check(ops []*Op, nodes []string, final map[string]map[string][]Entry, linTimeout time.Duration) *report {
	c := &checker{ops: ops, finalAll: final, nodes: nodes, rep: &report{}, linTimeout: linTimeout, lagWindow: lagWindow}
	for _, name := range allChecks {
		c.rep.get(name)
	}
	c.final = final[nodes[0]]
	c.index = map[string]map[string]finalEntry{}
	for sid, log := range c.final {
		idx := make(map[string]finalEntry, len(log))
		for i, e := range log {
			if _, dup := idx[e.ID]; !dup {
				idx[e.ID] = finalEntry{pos: i, seq: e.Seq}
			}
		}
		c.index[sid] = idx
	}
	c.checkFinal()
	c.checkAppends()
	c.checkRealtime()
	c.checkReads()
	c.checkMonotonic()
	c.checkLinearizable()
	return c.rep
}

// sessions returns the sessions of the history, sorted.
func (c *checker) sessions() []string {
	seen := map[string]bool{}
	for _, op := range c.ops {
		seen[op.Session] = true
	}
	for sid := range c.final {
		seen[sid] = true
	}
	out := make([]string, 0, len(seen))
	for sid := range seen {
		out = append(out, sid)
	}
	sort.Strings(out)
	return out
}

// checkFinal: duplicates in the reference log; every node's log the same.
func (c *checker) checkFinal() {
	dup, agree := c.rep.get(checkDuplicated), c.rep.get(checkFinalAgree)
	for _, sid := range c.sessions() {
		log := c.final[sid]
		dup.Count++
		seen := map[string]int{}
		for i, e := range log {
			if j, ok := seen[e.ID]; ok {
				dup.violate("session %s: entry %s is in the final log twice, at seq %d (position %d) and seq %d (position %d)",
					short(sid), e.ID, log[j].Seq, j, e.Seq, i)
				continue
			}
			seen[e.ID] = i
		}
		for _, node := range c.nodes[1:] {
			agree.Count++
			other, ok := c.finalAll[node][sid]
			if !ok && len(log) > 0 {
				agree.violate("session %s: %s has no final log; %s has %d entries", short(sid), node, c.nodes[0], len(log))
				continue
			}
			if i := firstDiff(log, other); i >= 0 {
				agree.violate("session %s: %s's final log differs from %s's at position %d: %s vs %s (%d vs %d entries)",
					short(sid), node, c.nodes[0], i, at(other, i), at(log, i), len(other), len(log))
			}
		}
	}
}

// firstDiff returns the first position where a and b differ, or -1.
func firstDiff(a, b []Entry) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// at describes log[i], or its absence.
func at(log []Entry, i int) string {
	if i >= len(log) {
		return "(end)"
	}
	return fmt.Sprintf("%s@%d", log[i].ID, log[i].Seq)
}

// checkAppends: acknowledged appends are in the final log at their
// sequence; failed ones are not.
func (c *checker) checkAppends() {
	lost, rej := c.rep.get(checkLost), c.rep.get(checkRejectedAbsent)
	for _, op := range c.ops {
		switch {
		case op.Kind == KindCreate && op.Outcome == OK:
			lost.Count++
			if _, ok := c.final[op.Session]; !ok {
				lost.violate("session %s created by %v is not in the final logs", short(op.Session), op)
			}
		case op.Kind == KindAppend && op.Outcome == OK:
			lost.Count++
			fe, ok := c.index[op.Session][op.Entry]
			switch {
			case !ok:
				lost.violate("acknowledged entry lost: %v is not in the final log", op)
			case fe.seq != op.Seq:
				lost.violate("acknowledged entry moved: %v is in the final log at seq %d", op, fe.seq)
			}
		case op.Kind == KindAppend && op.Outcome == Fail:
			rej.Count++
			if fe, ok := c.index[op.Session][op.Entry]; ok {
				rej.violate("failed append took effect: %v is in the final log at seq %d", op, fe.seq)
			}
		}
	}
}

// landed returns the sequence an append took effect at: its
// acknowledgement, or for an indeterminate one the final log's.
func (c *checker) landed(op *Op) (uint64, bool) {
	switch op.Outcome {
	case OK:
		return op.Seq, true
	case Unknown:
		fe, ok := c.index[op.Session][op.Entry]
		return fe.seq, ok
	}
	return 0, false
}

// checkRealtime: per session, an acknowledged append that completed before
// another append was invoked has the lower sequence.
func (c *checker) checkRealtime() {
	res := c.rep.get(checkRealtimeOrder)
	bySession := map[string][]*Op{}
	for _, op := range c.ops {
		if op.Kind == KindAppend {
			bySession[op.Session] = append(bySession[op.Session], op)
		}
	}
	for _, sid := range c.sessions() {
		var acked, later []*Op
		for _, op := range bySession[sid] {
			if op.Outcome == OK {
				acked = append(acked, op)
			}
			if _, ok := c.landed(op); ok {
				later = append(later, op)
			}
		}
		// Sweep the Bs by invocation, keeping the acknowledged A of
		// highest sequence among those completed before.
		slices.SortFunc(acked, func(a, b *Op) int { return cmpDur(a.Complete, b.Complete) })
		slices.SortFunc(later, func(a, b *Op) int { return cmpDur(a.Invoke, b.Invoke) })
		var best *Op
		i := 0
		for _, b := range later {
			for ; i < len(acked) && acked[i].Complete < b.Invoke; i++ {
				if best == nil || acked[i].Seq > best.Seq {
					best = acked[i]
				}
			}
			res.Count++
			bseq, _ := c.landed(b)
			if best != nil && best.Seq >= bseq {
				res.violate("real-time order: %v completed before %v was invoked, yet took seq %d >= %d",
					best, b, best.Seq, bseq)
			}
		}
	}
}

func cmpDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkReads: prefixes of the final log, read your writes, honest headers.
func (c *checker) checkReads() {
	prefix := c.rep.get(checkReadPrefix)
	rywNode, rywMin := c.rep.get(checkRYWNode), c.rep.get(checkRYWMinSeq)
	applied, lag := c.rep.get(checkAppliedSeq), c.rep.get(checkHonestLag)
	acked := map[string][]*Op{} // session -> acknowledged appends
	for _, op := range c.ops {
		if op.Kind == KindAppend && op.Outcome == OK {
			acked[op.Session] = append(acked[op.Session], op)
		}
	}
	for _, r := range c.ops {
		if r.Kind != KindRead || r.Outcome != OK || r.Truncated {
			continue
		}
		log := c.final[r.Session]
		prefix.Count++
		if i := prefixMismatch(r.Entries, log); i >= 0 {
			prefix.violate("read is not a prefix of the final log: %v; at position %d it has %s, the final log %s",
				r, i, at(r.Entries, i), at(log, i))
		}
		seen := make(map[string]bool, len(r.Entries))
		for _, e := range r.Entries {
			seen[e.ID] = true
		}
		// missing lists the entries of want not in the read.
		missing := func(want func(e Entry) bool) []Entry {
			var out []Entry
			for _, e := range log {
				if want(e) && !seen[e.ID] {
					out = append(out, e)
				}
			}
			return out
		}
		if r.MinSeq > 0 {
			rywMin.Count++
			if m := missing(func(e Entry) bool { return e.Seq <= r.MinSeq }); len(m) > 0 {
				rywMin.violate("read with minSeq %d misses %d entries at or below it, first %s: %v", r.MinSeq, len(m), at(m, 0), r)
			}
		}
		if r.Applied != nil {
			applied.Count++
			if m := missing(func(e Entry) bool { return e.Seq <= *r.Applied }); len(m) > 0 {
				applied.violate("read reports Pi-Applied-Seq %d yet misses %d entries at or below it, first %s: %v", *r.Applied, len(m), at(m, 0), r)
			}
		}
		// The appends acknowledged before the read was invoked.
		var before []*Op
		for _, a := range acked[r.Session] {
			if a.Complete < r.Invoke {
				before = append(before, a)
			}
		}
		if r.MinSeq == 0 && r.server() != "" {
			// Read your writes on the node that acknowledged them,
			// whichever transport each went by: every reply names its
			// node (Pi-Node).
			var miss []*Op
			for _, a := range before {
				if a.server() == r.server() && !seen[a.Entry] {
					miss = append(miss, a)
				}
			}
			rywNode.Count++
			if len(miss) > 0 {
				rywNode.violate("read answered by %s misses %d entries %s acknowledged before, first %v, latest %v; the read: %v",
					r.server(), len(miss), r.server(), miss[0], latest(miss), r)
			}
		}
		if r.Lag != nil && *r.Lag == 0 && !r.Stale {
			lag.Count++
			var miss []*Op
			strict := false
			for _, a := range before {
				if seen[a.Entry] {
					continue
				}
				strict = true
				own := a.server() != "" && a.server() == r.server()
				if own || a.Complete <= r.Invoke-c.lagWindow {
					miss = append(miss, a)
				}
			}
			if strict {
				c.rep.lagStrict++
			}
			if len(miss) > 0 {
				lag.violate("read reports Pi-Lag 0 and not stale yet misses %d entries acknowledged by its node, or by any %v before it, latest %v; the read: %v",
					len(miss), c.lagWindow, latest(miss), r)
			}
		}
	}
}

// checkMonotonic: a client's successive reads of a session answered by
// the same node never go back — each shows at least as many entries as the
// one before (both are prefixes of the final log: read-prefix).
func (c *checker) checkMonotonic() {
	mono := c.rep.get(checkMonotonic)
	type key struct {
		client  int
		session string
	}
	var reads []*Op
	for _, r := range c.ops {
		if r.Kind == KindRead && r.Outcome == OK && !r.Truncated && r.server() != "" {
			reads = append(reads, r)
		}
	}
	sort.Slice(reads, func(i, j int) bool { return reads[i].Invoke < reads[j].Invoke })
	last := map[key]*Op{}
	for _, r := range reads {
		k := key{r.Client, r.Session}
		prev := last[k]
		last[k] = r
		if prev == nil || prev.server() != r.server() {
			continue
		}
		mono.Count++
		if len(r.Entries) < len(prev.Entries) {
			mono.violate("read on %s shows %d entries, the same client's previous read there %d: %v, after %v",
				r.server(), len(r.Entries), len(prev.Entries), r, prev)
		}
	}
}

// latest returns the op of ops that completed last.
func latest(ops []*Op) *Op {
	var l *Op
	for _, op := range ops {
		if l == nil || op.Complete > l.Complete {
			l = op
		}
	}
	return l
}

// prefixMismatch returns the first position at which read is not the
// final log's prefix (ids equal, and seqs where the read has them), or -1.
func prefixMismatch(read, log []Entry) int {
	for i, e := range read {
		if i >= len(log) || e.ID != log[i].ID || (e.Seq != 0 && e.Seq != log[i].Seq) {
			return i
		}
	}
	return -1
}

// The porcupine model: one session's log. Inputs and outputs:

type linInput struct {
	Kind   Kind
	Entry  string
	Expect *uint64
	Op     *Op // for reports; not part of the model
}

type linOutput struct {
	OK       bool // appended (create, append), or read
	Conflict bool // a conditional append refused
	Seq      uint64
	Entries  []Entry // a strong read's result
}

// linState is a session's log, immutable: a linked list from the last
// entry, with its length, last sequence and a hash of its contents.
type linState struct {
	prev *linState
	e    Entry
	n    int
	last uint64 // the session's last sequence (the header's before any entry)
	hash uint64
}

func linStep(state, input, output any) (bool, any) {
	s, in, out := state.(*linState), input.(linInput), output.(linOutput)
	switch in.Kind {
	case KindCreate:
		if s.last != 0 || !out.OK {
			return false, s
		}
		return true, &linState{last: out.Seq, hash: out.Seq}
	case KindAppend:
		if s.last == 0 { // the session does not exist yet
			return false, s
		}
		if out.Conflict {
			return in.Expect != nil && *in.Expect != s.last, s
		}
		if in.Expect != nil && *in.Expect != s.last {
			return false, s
		}
		if out.Seq <= s.last {
			return false, s
		}
		e := Entry{ID: in.Entry, Seq: out.Seq}
		return true, &linState{prev: s, e: e, n: s.n + 1, last: out.Seq, hash: mix(s.hash, e)}
	case KindRead:
		if s.last == 0 || len(out.Entries) != s.n {
			return false, s
		}
		p := s
		for i := len(out.Entries) - 1; i >= 0; i-- {
			got := out.Entries[i]
			if got.ID != p.e.ID || (got.Seq != 0 && got.Seq != p.e.Seq) {
				return false, s
			}
			p = p.prev
		}
		return true, s
	}
	return false, s
}

// mix folds e into a running FNV-style hash.
func mix(h uint64, e Entry) uint64 {
	for _, b := range []byte(e.ID) {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return (h ^ e.Seq) * 1099511628211
}

func linEqual(a, b any) bool {
	x, y := a.(*linState), b.(*linState)
	for x != nil && y != nil {
		if x == y {
			return true
		}
		if x.n != y.n || x.last != y.last || x.hash != y.hash || x.e != y.e {
			return false
		}
		x, y = x.prev, y.prev
	}
	return x == nil && y == nil
}

var logModel = porcupine.Model{
	Init:  func() any { return &linState{} },
	Step:  linStep,
	Equal: linEqual,
	Hash:  func(s any) uint64 { return s.(*linState).hash },
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		switch {
		case in.Kind == KindRead:
			return fmt.Sprintf("read -> %d entries", len(out.Entries))
		case out.Conflict:
			return fmt.Sprintf("append %s expect %d -> conflict", in.Entry, *in.Expect)
		}
		return fmt.Sprintf("%s %s -> %d", in.Kind, in.Entry, out.Seq)
	},
	DescribeState: func(s any) string {
		st := s.(*linState)
		return fmt.Sprintf("%d entries, last seq %d", st.n, st.last)
	},
}

// linHistory builds porcupine's history of one session: creates, appends
// (resolved by the final log when indeterminate) and strong reads.
func (c *checker) linHistory(sid string, ops []*Op) []porcupine.Operation {
	var h []porcupine.Operation
	for _, op := range ops {
		in := linInput{Kind: op.Kind, Entry: op.Entry, Expect: op.Expect, Op: op}
		ret := int64(op.Complete)
		var out linOutput
		switch {
		case op.Kind == KindCreate && op.Outcome == OK:
			out = linOutput{OK: true, Seq: op.Seq}
		case op.Kind == KindAppend && op.Outcome == OK:
			out = linOutput{OK: true, Seq: op.Seq}
		case op.Kind == KindAppend && op.Outcome == Fail && op.Conflict:
			out = linOutput{Conflict: true}
		case op.Kind == KindAppend && op.Outcome == Unknown:
			fe, ok := c.index[sid][op.Entry]
			if !ok {
				continue // never took effect
			}
			out, ret = linOutput{OK: true, Seq: fe.seq}, math.MaxInt64
		case op.Kind == KindRead && op.Strong && op.Outcome == OK && !op.Truncated:
			out = linOutput{OK: true, Entries: op.Entries}
		default:
			continue // no effect, or not linearizable by contract (plain reads)
		}
		h = append(h, porcupine.Operation{ClientId: op.Client, Input: in, Call: int64(op.Invoke), Output: out, Return: ret})
	}
	return h
}

// checkLinearizable runs porcupine on each session's history.
func (c *checker) checkLinearizable() {
	res := c.rep.get(checkLinearizable)
	bySession := map[string][]*Op{}
	for _, op := range c.ops {
		bySession[op.Session] = append(bySession[op.Session], op)
	}
	var timedOut []string
	for _, sid := range c.sessions() {
		h := c.linHistory(sid, bySession[sid])
		if len(h) == 0 {
			continue
		}
		res.Count += len(h)
		// The verbose search (partial linearizations, for the report)
		// costs more: only for a history found wrong.
		switch porcupine.CheckOperationsTimeout(logModel, h, c.linTimeout) {
		case porcupine.Ok:
		case porcupine.Unknown:
			timedOut = append(timedOut, short(sid))
		default:
			_, info := porcupine.CheckOperationsVerbose(logModel, h, c.linTimeout)
			res.violate("session %s: %d operations are not linearizable; %s", short(sid), len(h), explainIllegal(h, info))
		}
	}
	if len(timedOut) > 0 {
		res.Note = fmt.Sprintf("search timed out (inconclusive) for sessions %s", strings.Join(timedOut, ", "))
	}
}

// explainIllegal names the first operation (by invocation) that the longest
// partial linearization porcupine found could not place.
func explainIllegal(h []porcupine.Operation, info porcupine.LinearizationInfo) string {
	parts := info.PartialLinearizations()
	if len(parts) == 0 || len(parts[0]) == 0 {
		return "porcupine gave no partial linearization"
	}
	longest := parts[0][0]
	for _, p := range parts[0] {
		if len(p) > len(longest) {
			longest = p
		}
	}
	placed := map[int]bool{}
	for _, i := range longest {
		placed[i] = true
	}
	first := -1
	for i := range h {
		if !placed[i] && (first < 0 || h[i].Call < h[first].Call) {
			first = i
		}
	}
	var last string
	if len(longest) > 0 {
		last = fmt.Sprintf("; the last it placed: %v", h[longest[len(longest)-1]].Input.(linInput).Op)
	}
	if first < 0 {
		return fmt.Sprintf("the longest linearizable prefix has %d operations%s", len(longest), last)
	}
	return fmt.Sprintf("the longest linearizable prefix has %d of %d operations; the first that cannot follow it: %v%s",
		len(longest), len(h), h[first].Input.(linInput).Op, last)
}
