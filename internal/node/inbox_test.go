package node

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/pifleet/sessionlog/client"
	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Replies go to the requester's own inbox prefix, which no other user may
// subscribe to: a reader is refused _INBOX.>, every _I.> and the admin's,
// pi-node's and another user's prefix, and hears nothing of an admin's list
// or of pi-node's own JetStream traffic; every role's work, JetStream and
// KV included, still gets its replies.
func TestInboxIsolation(t *testing.T) {
	dir := t.TempDir()
	authFile := filepath.Join(dir, "auth.json")
	f := natsauth.File{}
	for _, u := range []natsauth.User{{User: "admin", Role: natsauth.RoleAdmin}, {User: "reader", Role: natsauth.RoleReader},
		{User: "worker", Role: natsauth.RoleClient}, {User: "js.worker", Role: natsauth.RoleJetStream}} {
		h, err := bcrypt.GenerateFromPassword([]byte(u.User), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		u.Password = string(h)
		f.Users = append(f.Users, u)
	}
	writeFile(t, authFile, string(f.Marshal()))
	cert, key := selfSigned(t, dir, 1)
	m, _ := startNode(t, func(c *Config) { c.NATSAuth, c.NATSTLSCert, c.NATSTLSKey = authFile, cert, key })
	t.Cleanup(func() { m.Close(context.Background()) })
	ctx := context.Background()

	r, err := dialNode(m, cert, "reader", "reader")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	heard := make(chan *nats.Msg, 64)
	for _, subj := range []string{"_INBOX.>", "_I.>", "_I.*.>", natsauth.InboxPrefix("admin") + ".>",
		natsauth.InboxPrefix(natsauth.InternalUser) + ".>", natsauth.InboxPrefix("js.worker") + ".>", "_I.js.>"} {
		if _, err := r.ChanSubscribe(subj, heard); err != nil {
			t.Fatal(err)
		}
		if err := r.Flush(); err != nil { // the server's -ERR comes before the PONG
			t.Fatal(err)
		}
		if err := r.LastError(); !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), `"`+subj+`"`) {
			t.Errorf("the reader subscribes to %s: %v, want a permissions violation", subj, err)
		}
	}

	// A worker writes over the API; a JetStream worker (a name with a
	// dot) reads, appends and moves its cursor in the KV bucket.
	w, err := dialNode(m, cert, "worker", "worker")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wc, err := client.New(ctx, client.NodeNATS(w))
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	sess, err := wc.Create()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.AppendMessage(ctx, map[string]any{"role": "user", "content": "q", "timestamp": 1}); err != nil {
		t.Fatalf("the worker's append: %v", err)
	}
	// pi writes a session at its first assistant message.
	if _, err := sess.AppendMessage(ctx, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "a"}},
		"provider": "p", "model": "m", "stopReason": "stop", "timestamp": 2}); err != nil {
		t.Fatalf("the worker's append: %v", err)
	}
	jc, err := client.New(ctx, client.JetStreamURL(m.NATSURL, nats.UserInfo("js.worker", "js.worker"), nats.RootCAs(cert)))
	if err != nil {
		t.Fatalf("the jetstream role's client: %v", err)
	}
	defer jc.Close()
	js, err := jc.Open(ctx, sess.ID(), client.WithClientID("j"))
	if err != nil {
		t.Fatalf("the jetstream role opens the session: %v", err)
	}
	e, err := js.AppendMessage(ctx, map[string]any{"role": "user", "content": "again", "timestamp": 3})
	if err != nil {
		t.Fatalf("the jetstream role's append: %v", err)
	}
	if err := js.Branch(ctx, e.ID); err != nil {
		t.Fatalf("the jetstream role's cursor: %v", err)
	}
	if cur, err := js.Cursor(ctx); err != nil || cur.LeafID != e.ID {
		t.Fatalf("the jetstream role's cursor: %+v, %v", cur, err)
	}

	// pi-ctl's transport: the reader's and the admin's list and status.
	for _, u := range []string{"reader", "admin"} {
		n, err := apiclient.DialNATS(apiclient.NATSOptions{URL: m.NATSURL, User: u, Password: u, TLSCA: cert})
		if err != nil {
			t.Fatal(err)
		}
		var list wire.ListReply
		if err := apiclient.Call(ctx, n, wire.ListRequest{}, &list); err != nil || len(list.Sessions) != 1 {
			t.Errorf("%s's list: %+v, %v", u, list, err)
		}
		var st wire.StatusReply
		if err := apiclient.Call(ctx, n, wire.StatusRequest{}, &st); err != nil {
			t.Errorf("%s's status: %v", u, err)
		}
		n.Close()
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(heard) != 0 {
		t.Errorf("the reader heard %d replies of others, the first on %s", len(heard), (<-heard).Subject)
	}
}
