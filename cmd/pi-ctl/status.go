package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pifleet/sessionlog/internal/size"
	"github.com/pifleet/sessionlog/internal/wire"

	"github.com/pifleet/sessionlog/internal/tree"
)

// statusReply is /v1/status: this node's Store (the API's own type), and
// what pi-node reports about JetStream under "jetstream" (or {"error"} when
// it could not ask).
type statusReply struct {
	Node      string                `json:"node"`
	Service   string                `json:"service"`
	Version   string                `json:"version"`
	Store     wire.StoreStatus      `json:"store"`
	JetStream *wire.JetStreamStatus `json:"jetstream"`
	// Cluster is what every token gets; jetstream only an admin's.
	Cluster *wire.ClusterStatus `json:"cluster"`
}

const statusHelp = `Usage: pi-ctl status [--json]

Shows the pi-node that answers: how far its Store has applied the log (and
its lag), the sessions it knows and holds in memory; then the JetStream
side: the mode, the stream (messages, bytes, sequences, replicas, leader)
and every replica of it with its lag, as the stream's leader reports them.

Over NATS any pi-node may answer; --http asks the one at that URL.
With a token that is not an admin's the backend's details (addresses,
bucket, messages) are left out; the replicas are shown all the same.
--json prints the API's JSON.
`

func runStatus(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl status")
	conn := addConnFlags(fs)
	asJSON := fs.Bool("json", false, "print the API's JSON")
	if _, err := parseArgs(e, fs, statusHelp, args); err != nil {
		return err
	}
	var s statusReply
	if printed, err := conn.query(ctx, e, fs, wire.StatusRequest{}, *asJSON, &s); printed || err != nil {
		return err
	}
	var out strings.Builder
	writeStatus(&out, &s)
	_, err := io.WriteString(e.stdout, out.String())
	return err
}

// writeStatus renders the status as three blocks: node, stream, replicas.
func writeStatus(out *strings.Builder, s *statusReply) {
	st := &s.Store
	caught := "not caught up yet"
	if st.CaughtUpAt != nil {
		caught = "caught up " + shortTime(*st.CaughtUpAt)
	}
	kv := []string{
		"node", fmt.Sprintf("%s (%s %s)", tree.Printable(s.Node), s.Service, s.Version),
		"applied", fmt.Sprintf("seq %d of %d, lag %d (%s)", st.Applied, st.LogLastSeq, st.Lag, caught),
		"sessions", fmt.Sprintf("%d, %d in memory (%s)", st.Sessions, st.SessionsLoaded, size.Human(st.BytesHeld)),
		"records", fmt.Sprintf("%d applied, %d skipped; %d evictions, %d reloads", st.Records, st.SkippedRecords, st.Evictions, st.Reloads),
	}
	if st.LastFollowError != "" {
		kv = append(kv, "follow", "error: "+st.LastFollowError)
	}
	keyValues(out, kv...)
	js := s.JetStream
	if js == nil {
		// Not an admin token: the replicas all the same, and a word on
		// what is missing rather than nothing.
		if c := s.Cluster; c != nil && len(c.Streams) > 0 {
			out.WriteByte('\n')
			keyValues(out, "jetstream", c.Mode+" (the backend's addresses and configuration need an admin token)",
				"replicas", fmt.Sprintf("%d, leader %s", c.Streams[0].Replicas, orDash(c.Streams[0].Leader)))
			writeReplicas(out, st, c.Streams)
		}
		return
	}
	out.WriteByte('\n')
	if js.Error != "" {
		keyValues(out, "jetstream", "error: "+js.Error)
		return
	}
	mode := fmt.Sprintf("%s, connected to %s at %s", js.Mode, orDash(js.Server), js.Connected)
	if js.Cluster != "" {
		mode += ", cluster " + js.Cluster
	}
	ss := &js.Stream
	keyValues(out,
		"jetstream", mode,
		"stream", fmt.Sprintf("%s: %d messages, %s, seq %d–%d, %s", ss.Name, ss.Messages, size.Human(int64(ss.Bytes)), ss.FirstSeq, ss.LastSeq, plural(int(ss.Subjects), "session")),
		"replicas", fmt.Sprintf("%d, leader %s", ss.Replicas, orDash(ss.Leader)),
		"bucket", js.Bucket)
	writeRegion(out, js.Region)
	if js.ShardMap != "" {
		keyValues(out, "shard map", js.ShardMap+" (pi-ctl shards)")
	}
	streams := js.Shards
	if len(streams) == 0 {
		streams = []wire.StreamStatus{js.Stream}
	}
	writeReplicas(out, st, streams)
}

// writeReplicas renders a row per shard (when there are several), then
// the replicas of shard 0's stream.
func writeReplicas(out *strings.Builder, st *wire.StoreStatus, streams []wire.StreamStatus) {
	if len(streams) > 1 {
		// One row per shard: where its writes go, and how far each
		// shard's Store is.
		out.WriteByte('\n')
		t := &table{}
		t.row("SHARD", "STREAM", "LEADER", "REPLICAS", "LAST SEQ", "STORE LAG", "SESSIONS")
		for k, sh := range streams {
			lag, sessions := "-", "-"
			if k < len(st.Shards) {
				lag, sessions = strconv.FormatUint(st.Shards[k].Lag, 10), strconv.Itoa(st.Shards[k].Sessions)
			}
			current := 1
			for _, f := range sh.Followers {
				if followerState(f) == "current" {
					current++
				}
			}
			t.row(strconv.Itoa(k), sh.Name, orDash(sh.Leader), fmt.Sprintf("%d of %d current", current, sh.Replicas),
				strconv.FormatUint(sh.LastSeq, 10), lag, sessions)
		}
		t.write(out)
	}
	ss := &streams[0]
	if ss.Leader == "" && len(ss.Followers) == 0 {
		return
	}
	out.WriteByte('\n')
	t := &table{}
	t.row("REPLICA", "ROLE", "STATE", "LAG", "LAST SEEN")
	if ss.Leader != "" {
		t.row(ss.Leader, "leader", "current", "0", "-")
	}
	for _, f := range ss.Followers {
		t.row(f.Name, "follower", followerState(f), strconv.FormatUint(f.Lag, 10), orDash(f.Active))
	}
	t.write(out)
}

// followerState is the node's judgement of a follower (current, lagging or
// offline, by the bound its /readyz keeps), or for a node that does not
// report one, the leader's raw flags.
func followerState(f wire.PeerStatus) string {
	switch {
	case f.State != "":
		return f.State
	case f.Offline:
		return "offline"
	case f.Current:
		return "current"
	}
	return "catching up"
}
