package node

import (
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/store"
)

// What the node runs on, for the tests and the benchmark that check what
// the API does not show (the stream itself, the Stores' memory).

// Conn is the node's own connection to JetStream.
func (m *Node) Conn() *jetstream.Conn { return m.conn }

// JetStreamConfig is the node's stream and bucket (shard 0's stream).
func (m *Node) JetStreamConfig() jetstream.Config { return m.jsCfg }

// Service is what the API serves.
func (m *Node) Service() *service.Service { return m.svc }

// Stores is the Store of every shard.
func (m *Node) Stores() *store.Set { return m.stores }

// Sharded is the log over every shard's stream; nil in region mode.
func (m *Node) Sharded() *shard.Sharded { return m.sharded }
