package region

import (
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
)

// With several shards, every region's copy is one stream per shard, and
// the Node has a Log and a Feed per shard, each of one stream's own
// sequences. What it hands the Service and the Stores qualifies them
// (shard.Log), as a sharded log outside cross-region mode does, so that
// a sequence names one point of one shard; with one shard nothing is
// wrapped and the sequences are the stream's.

// StoreFeed is what shard k's Store follows (its feed and reload log).
type StoreFeed interface {
	session.Feed
	session.Log
}

// shardMap is the copies' map: fixed, one epoch.
func (n *Node) shardMap() shard.Map { return shard.OneMap(len(n.Feeds)) }

// ShardMap is the map that places sessions on the copies' shards.
func (n *Node) ShardMap() shard.Map { return n.shardMap() }

// WriteLog is the Service's log: the home's streams, each session on its
// shard's.
func (n *Node) WriteLog() session.Log {
	if len(n.Logs) == 1 {
		return n.Logs[0]
	}
	logs := make([]session.Log, len(n.Logs))
	for k, l := range n.Logs {
		logs[k] = &shard.Log{Log: l, Shard: k}
	}
	return mustSharded(n.shardMap(), logs)
}

// ReadLog is the Service's read log: what the Stores follow, each session
// on its shard's.
func (n *Node) ReadLog() session.Log {
	if len(n.Feeds) == 1 {
		return n.Feeds[0]
	}
	logs := make([]session.Log, len(n.Feeds))
	for k := range n.Feeds {
		logs[k] = n.StoreFeed(k)
	}
	return mustSharded(n.shardMap(), logs)
}

// StoreFeed is what shard k's Store follows.
func (n *Node) StoreFeed(k int) StoreFeed {
	if len(n.Feeds) == 1 {
		return n.Feeds[0]
	}
	return &shard.Log{Log: n.Feeds[k], Feed: n.Feeds[k], Shard: k}
}

// SearchFeed is what shard k's full-text index follows: the Feed's View
// (see Feed.View), reset emptying the index.
func (n *Node) SearchFeed(k int, reset func()) session.Feed {
	v := n.Feeds[k].View(reset)
	if len(n.Feeds) == 1 {
		return v
	}
	return &shard.Log{Log: n.Feeds[k], Feed: v, Shard: k}
}

func mustSharded(m shard.Map, logs []session.Log) *shard.Sharded {
	s, err := shard.NewSharded(m, logs)
	if err != nil {
		panic(err) // a log per shard of the map, by construction
	}
	return s
}
