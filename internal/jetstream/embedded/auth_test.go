package embedded

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/pifleet/sessionlog/internal/natsauth"
)

// authServer runs a server with one user per role, password = user name.
// Options, when given, change the server before it starts.
func authServer(t *testing.T, options ...func(*Server)) (*Server, *natsauth.File) {
	t.Helper()
	f := &natsauth.File{}
	for _, r := range natsauth.Roles {
		h := quickHash(t, r+"-pw")
		f.Users = append(f.Users, natsauth.User{User: r, Password: h, Role: r})
	}
	s := NewServer(t.TempDir())
	s.Port = -1
	s.Auth = f
	s.Logs = []natsauth.Names{{Stream: "PI_SESSIONS", SubjectPrefix: "pi.sess", Bucket: "PI_CURSORS"}}
	for _, o := range options {
		o(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s, f
}

// quickHash is a bcrypt hash of the lowest cost: the server's check of
// the default cost takes seconds under the race detector.
func quickHash(t *testing.T, pw string) string {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// conn is a connection under test.
type conn struct{ *nats.Conn }

func dial(t *testing.T, s *Server, user string, opts ...nats.Option) (*conn, error) {
	t.Helper()
	c := &conn{}
	opts = append(opts, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}), nats.NoReconnect())
	if user != "" {
		opts = append(opts, nats.UserInfo(user, user+"-pw"), nats.CustomInboxPrefix(natsauth.InboxPrefix(user)))
	}
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(nc.Close)
	c.Conn = nc
	return c, nil
}

// denied reports whether the server refused subject to c: a publish or a
// subscription answered with a permissions violation.
func (c *conn) denied(t *testing.T, sub bool, subject string) bool {
	t.Helper()
	if sub {
		if _, err := c.SubscribeSync(subject); err != nil {
			t.Fatal(err)
		}
	} else if err := c.Publish(subject, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil { // the server's -ERR comes before the PONG
		t.Fatal(err)
	}
	// The client records the server's -ERR as its last error while
	// reading, before the PONG that ends Flush.
	err := c.LastError()
	return errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), subject)
}

// Each role reaches what docs/SECURITY.md says and nothing else; no
// credential, a wrong password or a made-up user is refused at connect.
func TestRoles(t *testing.T) {
	s, _ := authServer(t)
	if _, err := dial(t, s, ""); err == nil {
		t.Error("a connection without credentials was admitted")
	}
	if _, err := dial(t, s, "", nats.UserInfo("client", "wrong")); err == nil {
		t.Error("a wrong password was admitted")
	}
	if _, err := dial(t, s, "", nats.UserInfo(natsauth.InternalUser, "")); err == nil {
		t.Error("the internal user was admitted over the network without its password")
	}
	cases := []struct {
		user    string
		sub     bool
		subject string
		denied  bool
	}{
		{"client", false, "pi.v1.append", false},
		{"client", false, "pi.v1.list", false},
		{"client", false, "$SRV.PING", false},
		{"client", false, "pi.v1.archive.run", true},
		{"client", false, "$JS.API.STREAM.DELETE.PI_SESSIONS", true},
		{"client", false, "$KV.PI_CURSORS.x", true},
		{"client", false, "pi.sess.0190a5c8-0000-7000-8000-000000000000", true},
		{"client", true, "pi.sess.>", true},
		{"reader", false, "pi.v1.entries", false},
		{"reader", false, "pi.v1.append", true},
		{"reader", false, "pi.v1.cursor.set", true},
		{"reader", true, "pi.sess.>", false},
		{"reader", false, "$JS.API.STREAM.DELETE.PI_SESSIONS", true},
		{"jetstream", false, "$JS.API.STREAM.INFO.PI_SESSIONS", false},
		{"jetstream", false, "pi.sess.0190a5c8-0000-7000-8000-000000000000", false},
		{"jetstream", false, "$JS.API.STREAM.DELETE.PI_SESSIONS", true},
		{"jetstream", false, "$JS.API.STREAM.PURGE.PI_SESSIONS", true},
		{"jetstream", false, "$JS.API.STREAM.UPDATE.PI_SESSIONS", true},
		{"jetstream", false, "$JS.API.STREAM.DELETE.KV_PI_CURSORS", true},
		{"jetstream", false, "pi.v1.archive.run", true},
		{"admin", false, "$JS.API.STREAM.INFO.PI_SESSIONS", false},
		{"admin", false, "pi.v1.archive.run", false},
		{"admin", true, ">", false},
		// Replies: each user's own inbox prefix and no other.
		{"reader", true, "_I.reader.>", false},
		{"reader", true, "_INBOX.>", true},
		{"reader", true, "_I.admin.>", true},
		{"reader", true, "_I._pi-node.>", true},
		{"client", true, "_I.*.>", true},
		{"jetstream", true, "_I.jetstream.x", false},
		{"jetstream", true, "_I.reader.>", true},
	}
	conns := map[string]*conn{}
	for _, c := range cases {
		if conns[c.user] == nil {
			nc, err := dial(t, s, c.user)
			if err != nil {
				t.Fatalf("%s: %v", c.user, err)
			}
			conns[c.user] = nc
		}
		if got := conns[c.user].denied(t, c.sub, c.subject); got != c.denied {
			t.Errorf("%s: subscribe %v %s: denied %v, want %v", c.user, c.sub, c.subject, got, c.denied)
		}
	}
}

// A reload swaps the users: a changed password takes effect for new
// connections and closes the old ones of that user; every other
// connection stays.
func TestReloadUsers(t *testing.T) {
	s, f := authServer(t)
	old, err := dial(t, s, "client")
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	old.SetClosedHandler(func(*nats.Conn) { close(closed) })
	reader, err := dial(t, s, "reader")
	if err != nil {
		t.Fatal(err)
	}
	inproc, err := nats.Connect("", s.InProcess()...)
	if err != nil {
		t.Fatal(err)
	}
	defer inproc.Close()

	next := *f
	next.Users = append([]natsauth.User(nil), f.Users...)
	h := quickHash(t, "rotated")
	next.Users[0].Password = h // client
	if err := s.Reload(&next); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection with the old password is still open")
	}
	if _, err := dial(t, s, "client"); err == nil {
		t.Error("the old password still connects")
	}
	if _, err := dial(t, s, "", nats.UserInfo("client", "rotated")); err != nil {
		t.Errorf("the new password: %v", err)
	}
	for name, nc := range map[string]*nats.Conn{"reader": reader.Conn, "in-process": inproc} {
		if err := nc.Flush(); err != nil || !nc.IsConnected() {
			t.Errorf("%s connection after the reload: %v", name, err)
		}
	}
	bad := next
	bad.Users = nil
	if err := s.Reload(&bad); err == nil {
		t.Error("a reload to no user at all was accepted")
	}
}

// Gateways get what routes get: the peer TLS (mutual) and the users
// file's gateway credentials, which nats-server also sends on its
// outbound gateways. (The
// refusals themselves are TestSecuredRoutes': the same TLS configuration
// and nats-server's same password check; a live supercluster is the
// compose region test's.)
func TestGatewaySecurityOptions(t *testing.T) {
	s := NewServer(t.TempDir())
	s.ClusterName, s.ClusterListen, s.Routes = "A", "127.0.0.1:6001", []*url.URL{{Scheme: "nats-route", Host: "127.0.0.1:6001"}}
	s.GatewayName, s.GatewayListen = "A", "127.0.0.1:7001"
	s.Gateways = map[string][]*url.URL{"B": {{Scheme: "nats", Host: "10.0.0.2:7222"}, {Scheme: "nats", Host: "10.0.0.3:7222"}}}
	s.Auth = &natsauth.File{
		Users:    []natsauth.User{{User: "ops", Password: quickHash(t, "pw"), Role: natsauth.RoleAdmin}},
		Routes:   &natsauth.Peer{User: "route", Password: "rpw"},
		Gateways: &natsauth.Peer{User: "gateway", Password: "gpw"},
	}
	s.PeerTLS = PeerTLSConfig(func() *tls.Certificate { return nil }, x509.NewCertPool())
	opts, err := s.options()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Gateway.TLSConfig != s.PeerTLS || opts.Cluster.TLSConfig != s.PeerTLS || opts.Gateway.TLSConfig.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Error("routes and gateways do not both require the peer TLS")
	}
	if opts.Gateway.Username != "gateway" || opts.Gateway.Password != "gpw" || opts.Cluster.Username != "route" {
		t.Errorf("credentials: gateway %q/%q, cluster %q", opts.Gateway.Username, opts.Gateway.Password, opts.Cluster.Username)
	}
	if s.Gateways["B"][0].User != nil {
		t.Error("options changed the caller's gateway URLs")
	}
}

// TestSystemRole: a user of the system role is in the servers' system
// account, where NATS tooling's requests are answered (what nats server
// report jetstream sends), and sees nothing of the account holding the
// sessions; a system user added by a reload connects, and the other
// connections stay.
func TestSystemRole(t *testing.T) {
	s, f := authServer(t)
	sys, err := dial(t, s, natsauth.RoleSystem)
	if err != nil {
		t.Fatal(err)
	}
	jsz := func(c *conn) (string, error) {
		msg, err := c.Request("$SYS.REQ.SERVER.PING.JSZ", []byte(`{}`), 5*time.Second)
		if err != nil {
			return "", err
		}
		return string(msg.Data), nil
	}
	body, err := jsz(sys)
	if err != nil || !strings.Contains(body, `"server":{"name":`) || !strings.Contains(body, `"config":{`) {
		t.Fatalf("$SYS.REQ.SERVER.PING.JSZ as the system user: %v %.300s", err, body)
	}
	// The global account has JetStream; the system account has none.
	if msg, err := sys.Request("$JS.API.INFO", nil, time.Second); err == nil && !strings.Contains(string(msg.Data), `"error"`) {
		t.Errorf("the system user reached the sessions' account's JetStream: %s", msg.Data)
	}
	admin, err := dial(t, s, natsauth.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if body, err := jsz(admin); err == nil && strings.Contains(body, `"config":{`) {
		t.Errorf("an admin (the global account) got the servers' JetStream report: %.200s", body)
	}

	next := *f
	next.Users = append([]natsauth.User(nil), f.Users...)
	next.Users = append(next.Users, natsauth.User{User: "surveyor", Password: quickHash(t, "surveyor-pw"), Role: natsauth.RoleSystem})
	if err := s.Reload(&next); err != nil {
		t.Fatal(err)
	}
	surveyor, err := dial(t, s, "surveyor")
	if err != nil {
		t.Fatalf("a system user added by a reload: %v", err)
	}
	if _, err := jsz(surveyor); err != nil {
		t.Errorf("the added system user: %v", err)
	}
	for name, c := range map[string]*conn{"system": sys, "admin": admin} {
		if err := c.Flush(); err != nil || !c.IsConnected() {
			t.Errorf("%s connection after the reload: %v", name, err)
		}
	}
	if _, err := dial(t, s, ""); err == nil {
		t.Error("a connection without credentials was admitted after the reload")
	}
}
