package wire

import "strconv"

// The forward protocol between pi-nodes that hold a share of the shards
// (pi-node's --hold): a node passes a request for a session on a shard it
// does not serve to that shard's holders, which answer in one queue group
// (docs/PROTOCOL.md, forwarded request). Only pi-nodes may publish there
// (natsauth's roles grant clients the pi.v1 operations alone): a forwarded
// request carries the principal the forwarding node authenticated.

// DefaultForwardPrefix is the subject prefix of forwarded requests:
// pi.fwd.<shard>.<op>.
const DefaultForwardPrefix = "pi.fwd"

// ForwardQueue is the queue group a shard's holders answer in: one of
// them gets each request.
const ForwardQueue = "pi-node"

// ForwardShardPrefix is the subjects of shard k's forwarded requests
// without their operation: "<prefix>.<k>.".
func ForwardShardPrefix(prefix string, k int) string {
	return prefix + "." + strconv.Itoa(k) + "."
}

// ForwardSubject is the subject of operation op forwarded to shard k.
func ForwardSubject(prefix string, k int, op string) string {
	return ForwardShardPrefix(prefix, k) + op
}

// Headers of forwarded requests and their replies.
const (
	HeaderFwdWho    = "Pi-Fwd-Who"    // the principal's name, for the audit log
	HeaderFwdScopes = "Pi-Fwd-Scopes" // its scopes, comma-separated
	HeaderFwdCwd    = "Pi-Fwd-Cwd"    // its cwdPrefix (a tenant token)
	HeaderFwdWait   = "Pi-Fwd-Wait"   // a sequence the holder must see: a write the forwarding node acknowledged, what its last read reflected, or the log's end when it started
	HeaderFwdShard  = "Pi-Fwd-Shard"  // list: the one shard to list
	HeaderFwdStatus = "Pi-Fwd-Status" // the reply's HTTP status
	HeaderFwdType   = "Pi-Fwd-Type"   // its content type
	HeaderFwdFile   = "Pi-Fwd-File"   // its download name
	HeaderFwdLocal  = "Pi-Fwd-Local"  // the holder could not answer (too large, not serving): serve it locally
	// HeaderServedBy, on an HTTP reply, names the node that answered a
	// forwarded request.
	HeaderServedBy = "Pi-Served-By"
)
