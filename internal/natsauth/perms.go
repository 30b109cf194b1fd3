package natsauth

import (
	"slices"

	"github.com/pifleet/sessionlog/internal/wire"
)

// Names are the JetStream assets of one session log: the stream, its
// subject prefix and the cursor bucket (pi-node's --stream,
// --subject-prefix and --bucket; in cross-region mode one set per region).
type Names struct {
	Stream        string
	SubjectPrefix string
	Bucket        string
}

// Perms are what a role may publish and subscribe to; a nil *Perms is
// everything.
type Perms struct {
	Publish   []string
	Subscribe []string
}

// InboxPrefix is user's inbox prefix, wire.InboxPrefix: only user may
// subscribe to it (Permissions). pi-node's own user starts with "_", which
// no user file's name does.
func InboxPrefix(user string) string { return wire.InboxPrefix(user) }

// Permissions is what role may do as user on a server holding the session
// logs named by logs. A client needs its inbox for every reply, so each
// role subscribes to its own (InboxPrefix); no role publishes to another's,
// the responders (pi-node's own user, JetStream) are unrestricted. pi-node's
// micro service also answers discovery ($SRV.>) to anyone who may call it.
func Permissions(role, user string, logs []Names) *Perms {
	inbox := []string{InboxPrefix(user) + ".>"}
	switch role {
	case RoleClient:
		return &Perms{Publish: append(opSubjects(wire.ScopeRead, wire.ScopeWrite), "$SRV.>"), Subscribe: inbox}
	case RoleReader:
		sub := inbox
		for _, n := range logs {
			sub = append(sub, n.SubjectPrefix+".>")
		}
		return &Perms{Publish: append(opSubjects(wire.ScopeRead), "$SRV.>"), Subscribe: sub}
	case RoleJetStream:
		pub := []string{"$JS.API.INFO"}
		for _, n := range logs {
			kv := "KV_" + n.Bucket
			for _, s := range []string{n.Stream, kv} {
				pub = append(pub,
					"$JS.API.STREAM.INFO."+s,
					"$JS.API.STREAM.MSG.GET."+s,
					"$JS.API.DIRECT.GET."+s, "$JS.API.DIRECT.GET."+s+".>",
					"$JS.API.CONSUMER.CREATE."+s, "$JS.API.CONSUMER.CREATE."+s+".>",
					"$JS.API.CONSUMER.INFO."+s+".*",
					"$JS.API.CONSUMER.DELETE."+s+".*",
					"$JS.API.CONSUMER.MSG.NEXT."+s+".*",
				)
			}
			pub = append(pub, n.SubjectPrefix+".>", "$KV."+n.Bucket+".>")
		}
		return &Perms{Publish: pub, Subscribe: inbox}
	}
	return nil // admin; system, in an account of its own
}

// opSubjects are the NATS subjects of the operations that need one of
// scopes.
func opSubjects(scopes ...string) []string {
	var out []string
	for _, o := range wire.Ops {
		if !o.HTTPOnly() && slices.Contains(scopes, o.Scope()) {
			out = append(out, o.Subject)
		}
	}
	return out
}
