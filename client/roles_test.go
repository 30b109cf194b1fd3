package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/pifleet/sessionlog/client"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/secrets"
)

// The jetstream role of pi-node's users file is exactly what the
// JetStream transport uses: a worker with it creates, appends, branches,
// forks and reads sessions and their cursors without one permissions
// violation, over the TLS port, while the client role (pi-node's API only) cannot even bind.
func TestJetStreamRole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	s := embedded.NewServer(t.TempDir())
	s.Port = -1
	s.Auth = &natsauth.File{Users: []natsauth.User{
		{User: "jsworker", Password: string(h), Role: natsauth.RoleJetStream},
		{User: "worker", Password: string(h), Role: natsauth.RoleClient},
	}}
	ca, err := secrets.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	s.TLS = embedded.ServerTLSConfig(func() *tls.Certificate { return &cert })
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	tlsCfg := &tls.Config{RootCAs: pool}
	cfg := jetstream.NewConfig()
	s.Logs = []natsauth.Names{{Stream: cfg.Stream, SubjectPrefix: cfg.SubjectPrefix, Bucket: cfg.Bucket}}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	cc := jetstream.NewConnConfig(s.InProcessURL())
	cc.Options = s.InProcess()
	admin, err := jetstream.Connect(ctx, cc) // pi-node's part: provisioning
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := jetstream.Provision(ctx, admin.JS, cfg); err != nil {
		t.Fatal(err)
	}

	nc, err := nats.Connect(s.ClientURL(), nats.Secure(tlsCfg), nats.UserInfo("jsworker", "pw"), nats.CustomInboxPrefix(client.InboxPrefix("jsworker")), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := client.New(ctx, client.JetStream(nc))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := c.Create(client.WithCwd("/w"), client.WithClientID("w1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.AppendMessage(ctx, map[string]any{"role": "user", "content": "q", "timestamp": 1}); err != nil {
		t.Fatal(err)
	}
	first, err := sess.AppendMessage(ctx, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "a"}},
		"provider": "p", "model": "m", "stopReason": "stop", "timestamp": 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.AppendMessage(ctx, map[string]any{"role": "user", "content": "q2", "timestamp": 3}); err != nil {
		t.Fatal(err)
	}
	if err := sess.Branch(ctx, first.IDs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Label(ctx, first.IDs[0], "here"); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Fork(ctx, first.IDs[0]); err != nil {
		t.Fatal(err)
	}
	again, err := c.Open(ctx, sess.ID(), client.WithClientID("w1"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(again.Export()), string(sess.Export()); got != want {
		t.Errorf("reopened session differs:\n%s\nwant\n%s", got, want)
	}
	if cur, err := again.Cursor(ctx); err != nil || cur == nil {
		t.Errorf("cursor: %v %v", cur, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := nc.LastError(); err != nil {
		t.Errorf("the jetstream role was refused something: %v", err)
	}

	// JetStreamURL with WithTLSConfig dials the TLS port itself.
	own, err := client.New(ctx, client.JetStreamURL(s.ClientURL(), nats.UserInfo("jsworker", "pw")), client.WithTLSConfig(tlsCfg))
	if err != nil {
		t.Fatalf("JetStreamURL over TLS: %v", err)
	}
	if _, err := own.Open(ctx, sess.ID()); err != nil {
		t.Errorf("JetStreamURL over TLS: open: %v", err)
	}
	own.Close()

	wc, err := nats.Connect(s.ClientURL(), nats.Secure(tlsCfg), nats.UserInfo("worker", "pw"), nats.CustomInboxPrefix(client.InboxPrefix("worker")), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	short, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	if c, err := client.New(short, client.JetStream(wc)); err == nil {
		c.Close()
		t.Error("the client role bound to the stream and bucket")
	}
}
