package natsauth_test

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/secrets"
	"github.com/pifleet/sessionlog/internal/wire"
)

// A file that Marshal wrote parses back to the same users.
func TestRoundTrip(t *testing.T) {
	h, err := natsauth.HashPassword(secrets.Password())
	if err != nil {
		t.Fatal(err)
	}
	f := &natsauth.File{
		Users: []natsauth.User{
			{User: "worker", Password: h, Role: natsauth.RoleClient},
			{NKey: "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4", Role: natsauth.RoleReader},
		},
		Routes: &natsauth.Peer{User: "route", Password: "abc123"},
	}
	g, err := natsauth.Parse(f.Marshal())
	if err != nil {
		t.Fatalf("%v\n%s", err, f.Marshal())
	}
	if len(g.Users) != 2 || g.Users[0] != f.Users[0] || g.Users[1] != f.Users[1] || *g.Routes != *f.Routes || g.Gateways != nil {
		t.Errorf("parsed %+v", g)
	}
}

// TestHashPasswordCost: a generated password's hash has bcrypt's least
// cost and matches it; a short password is refused, since the cost no
// longer protects a guessable one.
func TestHashPasswordCost(t *testing.T) {
	pw := secrets.Password()
	h, err := natsauth.HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := bcrypt.Cost([]byte(h)); err != nil || c != bcrypt.MinCost || natsauth.HashCost != bcrypt.MinCost {
		t.Errorf("cost %d (%v), want %d", c, err, bcrypt.MinCost)
	}
	if bcrypt.CompareHashAndPassword([]byte(h), []byte(pw)) != nil {
		t.Error("the hash is not the password's")
	}
	if len(pw) < natsauth.MinPasswordLen {
		t.Errorf("secrets.Password() has %d characters, under MinPasswordLen %d", len(pw), natsauth.MinPasswordLen)
	}
	if h, err := natsauth.HashPassword("s3cret"); err == nil || h != "" {
		t.Errorf("a 6-character password: %q, %v; want refused", h, err)
	}
}

// Each mistake is refused with the user's index and the field.
func TestRefusals(t *testing.T) {
	h, _ := natsauth.HashPassword(secrets.Password())
	for _, c := range []struct{ file, want string }{
		{`{"users":[]}`, "users: empty"},
		{`{"users":[{"user":"a","password":"` + h + `","role":"root"}]}`, `users[0].role: "root"`},
		{`{"users":[{"user":"a","password":"plain","role":"client"}]}`, "users[0].password: user a: not a bcrypt hash"},
		{`{"users":[{"role":"client"}]}`, "users[0]: needs user"},
		{`{"users":[{"nkey":"UABC","role":"client"}]}`, "users[0].nkey"},
		{`{"users":[{"user":"a","password":"` + h + `","role":"client"},{"user":"a","password":"` + h + `","role":"admin"}]}`, "users[1]: a is listed twice"},
		{`{"users":[{"user":"_pi-node","password":"` + h + `","role":"admin"}]}`, "users[0].user"},
		{`{"users":[{"user":"a","password":"` + h + `","role":"client"}],"routes":{"user":"r"}}`, "routes: needs user and password"},
		{`{"users":[{"user":"a","password":"` + h + `","role":"client","extra":1}]}`, `unknown field "extra"`},
	} {
		_, err := natsauth.Parse([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.file, err, c.want)
		}
	}
}

// Inbox prefixes are one subject token after _I., none inside another's
// (a dotted name is no other user's prefix plus a token; no name has the
// "~" a dot becomes), and each role subscribes to its user's only.
func TestInboxPrefix(t *testing.T) {
	users := []string{"a", "a.b", "a_b", "alice@example.com", "w-1", natsauth.InternalUser, "UA" + strings.Repeat("B", 54)}
	for _, u := range users {
		p := natsauth.InboxPrefix(u)
		if !strings.HasPrefix(p, "_I.") || strings.Count(p, ".") != 1 || strings.ContainsAny(p, "*> \t") {
			t.Errorf("%s: prefix %q is not _I. and one token", u, p)
		}
		for _, o := range users {
			if o != u && subjectMatches(p+".>", natsauth.InboxPrefix(o)+".x") {
				t.Errorf("%s's inbox %s.> covers %s's", u, p, o)
			}
		}
		for _, role := range []string{natsauth.RoleClient, natsauth.RoleReader, natsauth.RoleJetStream} {
			sub := natsauth.Permissions(role, u, nil).Subscribe
			if !slices.Contains(sub, p+".>") || slices.ContainsFunc(sub, func(s string) bool { return strings.HasPrefix(s, "_I") && s != p+".>" }) {
				t.Errorf("%s as %s subscribes %v", u, role, sub)
			}
		}
	}
}

// The client role calls every read and write operation and no admin one;
// the reader only the reads; neither touches JetStream. The JetStream role
// has its log's stream and bucket, no stream administration.
func TestPermissions(t *testing.T) {
	logs := []natsauth.Names{{Stream: "PI_SESSIONS", SubjectPrefix: "pi.sess", Bucket: "PI_CURSORS"}}
	client := natsauth.Permissions(natsauth.RoleClient, "u", logs)
	reader := natsauth.Permissions(natsauth.RoleReader, "u", logs)
	for _, o := range wire.Ops {
		if o.HTTPOnly() {
			continue
		}
		if got, want := slices.Contains(client.Publish, o.Subject), o.Scope() != wire.ScopeAdmin; got != want {
			t.Errorf("client may publish %s: %v, want %v", o.Subject, got, want)
		}
		if got, want := slices.Contains(reader.Publish, o.Subject), o.Scope() == wire.ScopeRead; got != want {
			t.Errorf("reader may publish %s: %v, want %v", o.Subject, got, want)
		}
	}
	for _, p := range [][]string{client.Publish, client.Subscribe, reader.Publish} {
		for _, s := range p {
			if strings.HasPrefix(s, "$JS") || strings.HasPrefix(s, "$KV") || strings.HasPrefix(s, "pi.sess") {
				t.Errorf("client or reader has %s", s)
			}
		}
	}
	if !slices.Contains(reader.Subscribe, "pi.sess.>") {
		t.Errorf("reader subscribes %v, want pi.sess.>", reader.Subscribe)
	}
	js := natsauth.Permissions(natsauth.RoleJetStream, "u", logs)
	for _, s := range js.Publish {
		if strings.Contains(s, "DELETE.PI_SESSIONS") && !strings.Contains(s, "CONSUMER") || strings.Contains(s, "PURGE") || strings.Contains(s, "UPDATE") || s == "$JS.API.>" {
			t.Errorf("jetstream role may publish %s", s)
		}
	}
	if natsauth.Permissions(natsauth.RoleAdmin, "u", logs) != nil {
		t.Error("admin is limited")
	}
	// What pi-nodes say to each other (forwarded requests carry the
	// principal the first node authenticated; membership drives who holds
	// what) is no other role's to publish or read.
	for name, p := range map[string]*natsauth.Perms{"client": client, "reader": reader, "jetstream": js} {
		for _, f := range append(slices.Clone(p.Publish), p.Subscribe...) {
			for _, subj := range []string{"pi.fwd.0.get", "pi.fwd.3.append", "$KV.PI_NODES.n1"} {
				if subjectMatches(f, subj) {
					t.Errorf("%s role's %s covers %s", name, f, subj)
				}
			}
		}
	}
}

// subjectMatches reports whether NATS subject filter f (with * and >)
// covers subject s.
func subjectMatches(f, s string) bool {
	ft, st := strings.Split(f, "."), strings.Split(s, ".")
	for i, tok := range ft {
		switch {
		case tok == ">":
			return i < len(st)
		case i >= len(st):
			return false
		case tok != "*" && tok != st[i]:
			return false
		}
	}
	return len(ft) == len(st)
}
