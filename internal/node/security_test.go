package node

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/pifleet/sessionlog/client"
	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Beyond loopback every listener needs its protection; the error names
// each one missing and what to add. On loopback nothing is needed, and
// --insecure starts anyway.
func TestFailClosed(t *testing.T) {
	dir := t.TempDir()
	auth := filepath.Join(dir, "auth.json")
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	f := natsauth.File{Users: []natsauth.User{{User: "w", Password: string(h), Role: natsauth.RoleClient}}, Routes: &natsauth.Peer{User: "r", Password: "p"}}
	writeFile(t, auth, string(f.Marshal()))
	cert, key := selfSigned(t, dir, 1)
	routes := []string{"--cluster-name", "c", "--cluster-listen", "0.0.0.0:6222", "--routes", "nats-route://a:6222"}
	tls := []string{"--cluster-tls-cert", cert, "--cluster-tls-key", key, "--cluster-tls-ca", cert}
	cases := []struct {
		name string
		args []string
		want []string // "" : starts
	}{
		{"loopback", nil, nil},
		{"localhost", []string{"--http-listen", "localhost:8080", "--client-listen", "[::1]:4222"}, nil},
		{"http", []string{"--http-listen", "0.0.0.0:8080"}, []string{"the HTTP API on 0.0.0.0:8080 has no auth: add --http-tokens FILE"}},
		{"http any host", []string{"--http-listen", ":8080"}, []string{"the HTTP API on :8080 has no auth"}},
		{"http by name", []string{"--http-listen", "pi-node-1:8080"}, []string{"the HTTP API on pi-node-1:8080 has no auth"}},
		{"http token", []string{"--http-listen", "10.1.2.3:8080", "--http-token", "x"}, nil},
		{"nats", []string{"--client-listen", "0.0.0.0:4222"}, []string{"the NATS client port on 0.0.0.0:4222 has no auth: add --nats-auth FILE"}},
		{"nats auth", []string{"--client-listen", "0.0.0.0:4222", "--nats-auth", auth}, nil},
		{"nats token", []string{"--client-listen", "0.0.0.0:4222", "--nats-token", "t"}, nil},
		{"routes", routes, []string{"the routes on 0.0.0.0:6222 have no TLS: add --cluster-tls-cert", `have no credentials: add "routes" to the --nats-auth file`}},
		{"routes tls", append(routes, tls...), []string{`have no credentials`}},
		{"routes secured", append(append(routes, tls...), "--nats-auth", auth), nil},
		{"monitor", []string{"--monitor-listen", "0.0.0.0:8222"}, []string{"the NATS monitoring port on 0.0.0.0:8222 has no auth"}},
		{"monitor loopback", []string{"--monitor-listen", "127.0.0.1:8222"}, nil},
		{"monitor, insecure", []string{"--monitor-listen", ":8222", "--insecure"}, nil},
		{"pprof", []string{"--pprof-listen", "0.0.0.0:6060"}, []string{"the profiling endpoints on 0.0.0.0:6060 have no auth"}},
		{"pprof loopback", []string{"--pprof-listen", "127.0.0.1:6060"}, nil},
		{"all, insecure", append(append(routes, "--http-listen", "0.0.0.0:8080", "--client-listen", "0.0.0.0:4222"), "--insecure"), nil},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		err := cfg.ParseFlags(c.args, func(string) string { return "" }, io.Discard)
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), "refusing to start: ") || !strings.Contains(err.Error(), "--insecure") {
			t.Errorf("%s: %v, want a refusal", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant %q", c.name, err, w)
			}
		}
	}
}

// A node with --insecure says so at start and on /v1/status.
func TestInsecureShown(t *testing.T) {
	m, logs := startNode(t, func(c *Config) { c.HTTPListen, c.Insecure = "0.0.0.0:0", true })
	var st wire.StatusReply
	if err := json.Unmarshal([]byte(getBody(t, "http://"+m.HTTPAddr+"/v1/status")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Insecure) != 1 || !strings.Contains(st.Insecure[0], "has no auth") {
		t.Errorf("status insecure: %q", st.Insecure)
	}
	if !strings.Contains(logs.String(), "--insecure: the HTTP API on 0.0.0.0:0 has no auth") {
		t.Errorf("no warning at start:\n%s", logs.String())
	}
	m.Close(context.Background())
}

// securedNode is a node whose NATS port has users and TLS: worker
// (client role) and reader, password = name.
func securedNode(t *testing.T) (m *Node, logs *testutil.SyncBuffer, authFile, caFile string) {
	t.Helper()
	dir := t.TempDir()
	authFile = filepath.Join(dir, "auth.json")
	writeAuth(t, authFile, map[string]string{"worker": "worker", "reader": "reader"})
	cert, key := selfSigned(t, dir, 1)
	m, logs = startNode(t, func(c *Config) {
		c.NATSAuth, c.NATSTLSCert, c.NATSTLSKey = authFile, cert, key
	})
	t.Cleanup(func() { m.Close(context.Background()) })
	return m, logs, authFile, cert
}

// writeAuth writes a users file: user → password, the role is the name.
func writeAuth(t *testing.T, path string, users map[string]string) {
	t.Helper()
	f := natsauth.File{}
	for u, pw := range users {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		role := map[string]string{"worker": natsauth.RoleClient, "reader": natsauth.RoleReader}[u]
		f.Users = append(f.Users, natsauth.User{User: u, Password: string(h), Role: role})
	}
	writeFile(t, path, string(f.Marshal()))
}

func dialNode(m *Node, ca, user, pw string) (*nats.Conn, error) {
	opts := []nats.Option{nats.NoReconnect(), nats.Timeout(5 * time.Second), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})}
	if ca != "" {
		opts = append(opts, nats.RootCAs(ca))
	}
	if user != "" {
		opts = append(opts, nats.UserInfo(user, pw), nats.CustomInboxPrefix(natsauth.InboxPrefix(user)))
	}
	return nats.Connect(m.NATSURL, opts...)
}

// On a secured NATS port pi-node itself serves (in process), a worker
// calls the API over TLS and no more; refusals are audited and counted;
// a reload rotates a password, closing only that user's connections.
func TestSecuredNATS(t *testing.T) {
	m, logs, authFile, ca := securedNode(t)
	if _, err := dialNode(m, ca, "", ""); err == nil {
		t.Error("a client without credentials connected")
	}
	if _, err := dialNode(m, "", "worker", "worker"); err == nil {
		t.Error("a client without TLS connected")
	}
	w, err := dialNode(m, ca, "worker", "worker")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// The Go client's NodeNATS transport needs no more than the role.
	c, err := client.New(context.Background(), client.NodeNATS(w))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.Create(client.WithClientID("w"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := sess.AppendMessage(ctx, map[string]any{"role": "user", "content": "q", "timestamp": 1}); err != nil {
		t.Fatal(err)
	}
	a, err := sess.AppendMessage(ctx, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "a"}},
		"provider": "p", "model": "m", "stopReason": "stop", "timestamp": 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Branch(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(ctx, sess.ID()); err != nil {
		t.Fatal(err)
	}
	_ = w.Flush()
	if err := w.LastError(); err != nil {
		t.Fatalf("the client role was refused something the Go client needs: %v", err)
	}
	c.Close()
	if err := w.Publish("$JS.API.STREAM.DELETE.PI_SESSIONS", nil); err != nil {
		t.Fatal(err)
	}
	_ = w.Flush()
	if err := w.LastError(); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Errorf("stream delete by a worker: %v, want a permissions violation", err)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		l := logs.String()
		if !strings.Contains(l, "audit: nats forbidden") || !strings.Contains(l, "user=worker") || !strings.Contains(l, "audit: nats unauthorized") {
			return errors.New("no audit lines for the refusals:\n" + l)
		}
		return nil
	})
	metrics := getBody(t, "http://"+m.HTTPAddr+"/metrics")
	if !strings.Contains(metrics, `pi_nats_auth_total{outcome="forbidden"} 1`) {
		t.Errorf("metrics:\n%s", grepLines(metrics, "pi_nats_auth_total"))
	}

	// A refused request names the refusal, not a timeout.
	rc, err := dialNode(m, ca, "reader", "reader")
	if err != nil {
		t.Fatal(err)
	}
	rcl, err := client.New(ctx, client.NodeNATS(rc), client.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rcl.Open(ctx, sess.ID(), client.WithClientID("r"))
	if err != nil {
		t.Fatalf("the reader opens a session: %v", err)
	}
	if _, err := rs.AppendMessage(ctx, map[string]any{"role": "user", "content": "no", "timestamp": 3}); err == nil || !strings.Contains(err.Error(), "may not publish to pi.v1.append") {
		t.Errorf("the reader's append: %v, want the refusal named", err)
	}
	rcl.Close()
	rc.Close()

	closed := make(chan struct{})
	w.SetClosedHandler(func(*nats.Conn) { close(closed) })
	r, err := dialNode(m, ca, "reader", "reader")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	writeAuth(t, authFile, map[string]string{"worker": "rotated", "reader": "reader"})
	if err := m.Reload(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker's connection with the old password is open after the reload")
	}
	if _, err := dialNode(m, ca, "worker", "worker"); err == nil {
		t.Error("the old password connects after the reload")
	}
	w2, err := dialNode(m, ca, "worker", "rotated")
	if err != nil {
		t.Fatalf("the new password: %v", err)
	}
	w2.Close()
	if _, err := r.Request(wire.OpStatus.Subject, []byte("{}"), 10*time.Second); err != nil {
		t.Errorf("the reader after the reload: %v", err)
	}
	// pi-node's own connection is untouched: it still writes.
	created := createSession(t, "http://"+m.HTTPAddr)
	if created.LastSeq == 0 {
		t.Error("no write after the reload")
	}
	writeFile(t, authFile, "{broken")
	if err := m.Reload(); err == nil {
		t.Error("a broken users file was reloaded")
	}
	if _, err := dialNode(m, ca, "worker", "rotated"); err != nil {
		t.Errorf("after a failed reload the users changed: %v", err)
	}
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	_, body := httpGet(t, url)
	return body
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
