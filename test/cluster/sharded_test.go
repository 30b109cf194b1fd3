//go:build linux

package cluster

import (
	"fmt"
	"os"
	"strconv"

	"github.com/pifleet/sessionlog/internal/shard"
)

// The tests of this package run as they are on a sharded store when
// PI_NODE_SHARDS is set (every pi-node they start reads it, as it reads
// every flag from PI_NODE_<FLAG>): .ci/run runs them again with 4. A
// sequence is then one shard's (shard.Seq), and what the tests
// compare with "the log's last sequence" they compare per shard with the
// helpers below.

// testShards is the shard count the nodes run with.
func testShards() int {
	n, err := strconv.Atoi(os.Getenv("PI_NODE_SHARDS"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// streamOf is the stream and subject of session sid.
func streamOf(sid string) (stream, subject string) {
	k := shard.Of(sid, testShards())
	if k == 0 {
		return "PI_SESSIONS", "pi.sess." + sid
	}
	return fmt.Sprintf("PI_SESSIONS_%d", k), fmt.Sprintf("pi.sess.%d.%s", k, sid)
}

// streams are every shard's stream, by shard.
func streams() []string {
	out := []string{"PI_SESSIONS"}
	for k := 1; k < testShards(); k++ {
		out = append(out, fmt.Sprintf("PI_SESSIONS_%d", k))
	}
	return out
}

// covers reports whether a read's Pi-Applied-Seq says it reflects minSeq:
// on a sharded store a session's read names its own shard's position,
// which says nothing of another shard's minSeq (the node waited for that
// one all the same), and the catalog's is a sum of every shard's.
func covers(applied, minSeq uint64) bool {
	return shard.OfSeq(applied) != shard.OfSeq(minSeq) || applied >= minSeq
}

// appliedAt is the node's Store position in seq's shard; seq itself for a
// shard the node does not hold (its reads there are the log's: nothing to
// wait for).
func (s nodeStatus) appliedAt(seq uint64) uint64 {
	if s.elsewhere(seq) {
		return seq
	}
	if k := shard.OfSeq(seq); k < len(s.Store.Shards) {
		return s.Store.Shards[k].Applied
	}
	return s.Store.Applied
}

// logLastAt is the log's end the node's Store knows of in seq's shard
// (store.logLastSeq, each shard's with shards).
func (s nodeStatus) logLastAt(seq uint64) uint64 {
	if s.elsewhere(seq) {
		return seq
	}
	if k := shard.OfSeq(seq); k < len(s.Store.Shards) {
		return s.Store.Shards[k].LogLastSeq
	}
	return s.Store.LogLastSeq
}

// logEnds is the log's last sequence in each shard, qualified.
func (s nodeStatus) logEnds() []uint64 {
	if len(s.JetStream.Shards) == 0 {
		return []uint64{s.JetStream.Stream.LastSeq}
	}
	out := make([]uint64, len(s.JetStream.Shards))
	for k, sh := range s.JetStream.Shards {
		out[k] = shard.Seq(k, sh.LastSeq)
	}
	return out
}

// holds reports whether the node holds session sid's shard in memory (on
// a sharded store each node holds a share: --hold defaults to 2).
func (s nodeStatus) holds(sid string) bool {
	k := shard.Of(sid, testShards())
	return k >= len(s.Store.Shards) || s.Store.Shards[k].Holding != "elsewhere"
}

// elsewhere reports whether seq's shard is one the node does not hold.
func (s nodeStatus) elsewhere(seq uint64) bool {
	k := shard.OfSeq(seq)
	return k < len(s.Store.Shards) && s.Store.Shards[k].Holding == "elsewhere"
}

// lacks says which of ends (one per shard) the node's Store has not
// applied, or nil (appliedAt: a shard it does not hold has nothing to apply).
func (s nodeStatus) lacks(ends []uint64) error {
	for _, end := range ends {
		if got := s.appliedAt(end); got < end {
			// Which shard, how the node holds it, its stream as the node
			// sees it (a leader? how far?) and why its Store last failed
			// to read on: what a failure's log cannot say later.
			k := shard.OfSeq(end)
			hold := ""
			if k < len(s.Store.Shards) {
				hold = s.Store.Shards[k].Holding
			}
			leader, last := "?", "?"
			if k < len(s.JetStream.Shards) {
				leader, last = s.JetStream.Shards[k].Leader, strconv.FormatUint(s.JetStream.Shards[k].LastSeq, 10)
			}
			return fmt.Errorf("applied %d of %d (shard %d, sequence %d, holding %q; its stream's leader %q, last sequence %s; last follow error %q)",
				got, end, k, shard.Raw(end), hold, leader, last, s.Store.LastFollowError)
		}
	}
	return nil
}

// maxEnds is the highest of each shard's ends over several views.
func maxEnds(views ...[]uint64) []uint64 {
	var out []uint64
	for _, v := range views {
		for k, e := range v {
			if k >= len(out) {
				out = append(out, 0)
			}
			out[k] = max(out[k], e)
		}
	}
	return out
}

// shard0 is the scan of shard 0's stream alone: the failover the kill
// tests time is that stream's (its leader is the one killed).
func (s logScan) shard0() logScan {
	if testShards() == 1 {
		return s
	}
	out := s
	out.recs = nil
	for _, r := range s.recs {
		if shard.OfSeq(r.seq) == 0 {
			out.recs = append(out.recs, r)
		}
	}
	return out
}

// onShard0 are the writers whose sessions are on shard 0.
func onShard0(ws []*writer) []*writer {
	if testShards() == 1 {
		return ws
	}
	var out []*writer
	for _, w := range ws {
		if shard.Of(w.sid, testShards()) == 0 {
			out = append(out, w)
		}
	}
	return out
}

// floor is the minSeq a read of one session passes: the log-wide last
// sequence, or with shards the session's own (a sequence of another
// shard does not make a node wait for this one's).
func floor(own, last uint64) uint64 {
	if testShards() > 1 {
		return own
	}
	return last
}

// catalogPath reads the whole catalog: with shards, linearizable, so that
// every node waits for every shard (one minSeq names one shard only).
var catalogPath = func() string {
	if testShards() > 1 {
		return "/v1/sessions?limit=1000&consistency=strong"
	}
	return "/v1/sessions?limit=1000"
}()
