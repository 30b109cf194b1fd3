package wire

import "time"

// StatusReply is the /v1/status reply.
type StatusReply struct {
	Node    string `json:"node"`
	Service string `json:"service"`
	Version string `json:"version"` // of the API (the NATS micro service's version)
	// Build is pi-node's own build.
	Build BuildStatus `json:"build"`
	Store StoreStatus `json:"store"`
	// Insecure lists the listeners the node serves without auth or TLS
	// because it was started with --insecure (docs/SECURITY.md).
	Insecure []string `json:"insecure,omitempty"`
	// EncryptedAtRest is true when the node encrypts what it writes to
	// disk (--encryption-key-file; docs/SECURITY.md).
	EncryptedAtRest bool `json:"encryptedAtRest,omitempty"`
	// JetStream is what pi-node reports about its backend (a
	// JetStreamStatus), or {"error": "..."} when asking failed: status must
	// still answer when the backend is what is broken.
	JetStream any `json:"jetstream,omitempty"`
	// Cluster is the topology any read token may see (the web console's
	// cluster view): absent when the backend could not be asked.
	Cluster *ClusterStatus `json:"cluster,omitempty"`
}

// ClusterStatus is the part of the backend's status that says where the
// data lives and how current it is — each session stream's leader and
// replicas, the live nodes and their shares — and nothing of how to reach
// or configure it (addresses, buckets, regions: JetStream's part, admin).
type ClusterStatus struct {
	Mode string `json:"mode"`
	// Streams is every shard's session stream, shard 0's first.
	Streams []StreamStatus `json:"streams"`
	Hold    int            `json:"hold,omitempty"`
	Members []MemberStatus `json:"members,omitempty"`
}

// ClusterOf is st's ClusterStatus.
func ClusterOf(st JetStreamStatus) *ClusterStatus {
	streams := st.Shards
	if len(streams) == 0 {
		streams = []StreamStatus{st.Stream}
	}
	return &ClusterStatus{Mode: st.Mode, Streams: streams, Hold: st.Hold, Members: st.Members}
}

// StoreStatus is the Store's part of the status: how far this node has
// applied the log and what it holds in memory.
type StoreStatus struct {
	Applied         uint64     `json:"applied"`
	LogLastSeq      uint64     `json:"logLastSeq"`
	Lag             uint64     `json:"lag"`
	CaughtUpAt      *time.Time `json:"caughtUpAt"`
	Sessions        int        `json:"sessions"`
	SessionsLoaded  int        `json:"sessionsLoaded"`
	BytesHeld       int64      `json:"bytesHeld"`
	Records         uint64     `json:"records"`
	SkippedRecords  uint64     `json:"skippedRecords"`
	Evictions       uint64     `json:"evictions"`
	Reloads         uint64     `json:"reloads"`
	LastFollowError string     `json:"lastFollowError,omitempty"`
	// Search is how far the full-text index has followed the log; absent
	// where search is not served (no index opened).
	Search *SearchStatus `json:"search,omitempty"`
	// Shards is each shard's Store, with --shards above 1 (the fields
	// above are then their sums: applied, logLastSeq and lag count
	// records, they are no sequences).
	Shards []ShardStoreStatus `json:"shards,omitempty"`
}

// SearchStatus is the full-text index's part of the Store status. With
// --shards above 1, applied and lag are sums over the held shards, as the
// Store's are.
type SearchStatus struct {
	Applied  uint64 `json:"applied"`  // the last sequence indexed
	Lag      uint64 `json:"lag"`      // records the index is behind the log's end
	CaughtUp bool   `json:"caughtUp"` // it has reached the log's end as it found it at start
}

// ShardStoreStatus is one shard's Store: its sequences are the shard's
// qualified ones (docs/PROTOCOL.md, shards).
type ShardStoreStatus struct {
	Shard      int    `json:"shard"`
	Applied    uint64 `json:"applied"`
	LogLastSeq uint64 `json:"logLastSeq"`
	Lag        uint64 `json:"lag"`
	Sessions   int    `json:"sessions"`
	BytesHeld  int64  `json:"bytesHeld"`
	// MemoryBudget is this shard's part of the node's --memory-budget
	// (shared among the shards it holds); absent without one.
	MemoryBudget int64 `json:"memoryBudget,omitempty"`
	// Holding, on a node that holds a share of the shards (--hold), is
	// HoldServing, HoldCatchingUp or HoldElsewhere.
	Holding string `json:"holding,omitempty"`
}

// BuildStatus names a pi-node's build (StatusReply.Build).
type BuildStatus struct {
	Version  string `json:"version"`            // a tag or git describe; "devel" when not stamped
	Revision string `json:"revision"`           // the commit; "unknown" when not recorded
	Go       string `json:"go"`                 // the Go release
	Modified bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
}

// What a node holding a share does with a shard (ShardStoreStatus.Holding).
const (
	HoldServing    = "serving"     // in memory, caught up: it answers for the shard
	HoldCatchingUp = "catching-up" // taking it over: its other holders answer meanwhile
	HoldElsewhere  = "elsewhere"   // not held here: its requests are forwarded to its holders
)

// MemberStatus is one live pi-node as the members bucket announces it
// (JetStreamStatus.Members): the shards it follows and those it serves.
type MemberStatus struct {
	Node  string `json:"node"`
	Held  []int  `json:"held"`
	Ready []int  `json:"ready"`
}

// JetStreamStatus is what pi-node reports under "jetstream" in /v1/status,
// and what pi-ctl status reads back. Error alone is set when the node could
// not ask JetStream.
type JetStreamStatus struct {
	Error     string       `json:"error,omitempty"`
	Mode      string       `json:"mode"` // embedded, embedded-cluster, external
	Server    string       `json:"server"`
	Connected string       `json:"connected"`
	Cluster   string       `json:"cluster,omitempty"`
	Stream    StreamStatus `json:"stream"`
	// Shards is every shard's stream (shard 0's is Stream), with
	// --shards above 1: where its leader is and how current its replicas.
	Shards []StreamStatus `json:"shards,omitempty"`
	// ShardMap is the shard map this node routes by, in the encoding of
	// docs/PROTOCOL.md#shards ("1,4@2026-12-02T04:00:00.000Z"), with more
	// than one shard stream.
	ShardMap string `json:"shardMap,omitempty"`
	// Hold and Members, with --hold below the node count: how many nodes
	// hold each shard, and the live nodes with their shares.
	Hold    int            `json:"hold,omitempty"`
	Members []MemberStatus `json:"members,omitempty"`
	Bucket  string         `json:"bucket"`
	// Region is the cross-region state: this node's region and role, the
	// home, the streams it reads and writes, and its mirror's lag.
	Region *RegionStatus `json:"region,omitempty"`
}

// StreamStatus describes the session stream as its leader reports it.
type StreamStatus struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
	Leader   string `json:"leader,omitempty"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	FirstSeq uint64 `json:"firstSeq"`
	LastSeq  uint64 `json:"lastSeq"`
	Subjects uint64 `json:"subjects"`
	// MaxBytes is the stream's byte limit; absent without one.
	MaxBytes  int64        `json:"maxBytes,omitempty"`
	Followers []PeerStatus `json:"followers,omitempty"`
}

// PeerStatus is one replica of the stream besides the leader.
type PeerStatus struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	Offline bool   `json:"offline,omitempty"` // State is offline
	Lag     uint64 `json:"lag"`
	// Active is how long ago the leader last heard from it, or "never"
	// since the leader's election.
	Active string `json:"lastSeen"`
	// State is current, lagging or offline by the bound /readyz keeps
	// (pi-node's --ready-max-lag), as pi_stream_replicas counts it.
	State string `json:"state,omitempty"`
}

// RegionStatus is the region part of a node's status (cross-region mode).
type RegionStatus struct {
	Region  string            `json:"region"`
	Role    string            `json:"role"` // home, mirror or stale (internal/region's Role)
	Home    string            `json:"home"`
	Epoch   uint64            `json:"epoch"`
	ForkSeq uint64            `json:"forkSeq,omitempty"`
	Regions []string          `json:"regions"`
	Stale   map[string]uint64 `json:"stale,omitempty"`
	// Reads is the stream the node's Store follows, Writes the one its
	// writes go to.
	Reads  string `json:"reads"`
	Writes string `json:"writes"`
	// Shards is how many shards every region's copy has, when more than
	// one; ForkSeqs and StaleShards are then ForkSeq and Stale by shard.
	Shards      int                 `json:"shards,omitempty"`
	ForkSeqs    []uint64            `json:"forkSeqs,omitempty"`
	StaleShards map[string][]uint64 `json:"staleShards,omitempty"`
	// Mirror is the state of this region's mirror (role mirror only);
	// with shards, of all of them: sequences and lags summed (the lag
	// unknown if one shard's is), caught up and reachable if every one
	// is. ShardMirrors has each shard's.
	Mirror        *MirrorStatus  `json:"mirror,omitempty"`
	ShardMirrors  []MirrorStatus `json:"shardMirrors,omitempty"`
	RecordUpdated time.Time      `json:"recordUpdatedAt"`
	RecordChange  string         `json:"recordChange"`
}

// MirrorStatus is a mirror stream as its leader reports it, measured
// against the home's stream.
type MirrorStatus struct {
	Origin  string `json:"origin"`
	LastSeq uint64 `json:"lastSeq"`
	// HomeLastSeq is the home stream's last sequence, when it answered.
	HomeLastSeq *uint64 `json:"homeLastSeq,omitempty"`
	// Lag is how many of the home's sequences the mirror has not copied:
	// HomeLastSeq - LastSeq when the home answered, else the mirror's own
	// report as of its last contact, LastContact ago. Null when unknown:
	// the mirror has never heard from a home that does not answer.
	Lag *uint64 `json:"lag"`
	// LagFrom says where Lag comes from: "origin" (the home's state),
	// "mirror" (its last report) or "unknown".
	LagFrom     string `json:"lagFrom"`
	LastContact string `json:"lastContact"`
	// CaughtUp: the mirror has held everything the home held at least once
	// since this node started following it; the node is not ready before.
	CaughtUp  bool   `json:"caughtUp"`
	Error     string `json:"error,omitempty"`
	Reachable bool   `json:"reachable"`
}
