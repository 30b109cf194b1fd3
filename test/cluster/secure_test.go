package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// secrets is what `pi-ctl gen-secrets` wrote.
type secrets struct {
	dir  string
	pool *x509.CertPool
}

func (s secrets) path(name string) string { return filepath.Join(s.dir, name) }

func (s secrets) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(s.path(name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// genSecrets runs the documented one-liner.
func genSecrets(t *testing.T) secrets {
	t.Helper()
	s := secrets{dir: filepath.Join(t.TempDir(), "secrets")}
	if out, err := exec.Command(piCtl(t), "gen-secrets", "--out", s.dir, "--names", "n1,n2,n3").CombinedOutput(); err != nil {
		t.Fatalf("pi-ctl gen-secrets: %v\n%s", err, out)
	}
	s.pool = x509.NewCertPool()
	if !s.pool.AppendCertsFromPEM([]byte(s.read(t, "ca.pem"))) {
		t.Fatal("ca.pem holds no certificate")
	}
	return s
}

// runCtl runs pi-ctl and returns its combined output and error.
func runCtl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(piCtl(t), args...).CombinedOutput()
	return string(out), err
}

// privateCA: a client without the cluster's CA is told at once that the
// certificate is not trusted and where to give the CA — not "is pi-node
// running?", and not after retrying for 10 s as if it were an outage —
// and $PI_CTL_TLS_CA gives it as --tls-ca does: pi-ctl over HTTPS and
// NATS, and examples/agent (the Go client) over HTTPS.
func privateCA(t *testing.T, s secrets, nd *piNode, admin, worker string) {
	t.Helper()
	agent, err := proctest.BuildInto(binDir, proctest.Bin{Name: "agent", Pkg: "github.com/pifleet/sessionlog/examples/agent"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(ca, bin string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "PI_CTL_SERVER=", "PI_CTL_HTTP=", "PI_CTL_TOKEN=", "PI_CTL_PASSWORD=", "PI_CTL_TLS_CA="+ca)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, c := range []struct {
		name string
		bin  string
		args []string
	}{
		{"pi-ctl over HTTPS", piCtl(t), []string{"status", "--http", nd.base, "--token", admin}},
		{"pi-ctl over NATS", piCtl(t), []string{"ls", "--server", nd.natsURL, "--user", "worker", "--password", s.read(t, "nats-worker.password")}},
		{"examples/agent over HTTPS", agent, []string{"--http", nd.base, "--token", worker}},
	} {
		out, err := run("", c.bin, c.args...)
		if err == nil || !strings.Contains(out, "certificate is not trusted") || !strings.Contains(out, "PI_CTL_TLS_CA") ||
			strings.Contains(out, "is pi-node running") || strings.Contains(out, "unavailable") {
			t.Errorf("%s without the CA: %v, want a certificate error that names $PI_CTL_TLS_CA, at once:\n%s", c.name, err, out)
		}
		if out, err := run(s.path("ca.pem"), c.bin, c.args...); err != nil {
			t.Errorf("%s with $PI_CTL_TLS_CA: %v\n%s", c.name, err, out)
		}
	}
}

// startSecuredCluster starts three pi-nodes with everything gen-secrets
// made: HTTPS with scoped tokens, NATS users over TLS, mutual TLS and
// credentials on the routes.
func startSecuredCluster(t *testing.T, s secrets) ([]*piNode, []string, *http.Client) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.pool}}}
	ports := testutil.FreePorts(t, 9)
	routes := make([]string, 3)
	for i := range 3 {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3*i+1])
	}
	nodes := make([]*piNode, 3)
	for i := range 3 {
		name := fmt.Sprintf("n%d", i+1)
		dataDir := t.TempDir()
		httpPort, clusterPort, clientPort := ports[3*i], ports[3*i+1], ports[3*i+2]
		nd := &piNode{name: name, base: fmt.Sprintf("https://127.0.0.1:%d", httpPort),
			natsURL: fmt.Sprintf("tls://127.0.0.1:%d", clientPort), dataDir: dataDir}
		nd.Proc = proctest.New(t, name, piNodeBin,
			"--node-name", name, "--cluster-name", "pi-secure",
			"--cluster-listen", fmt.Sprintf("127.0.0.1:%d", clusterPort), "--routes", strings.Join(routes, ","),
			"--replicas", "3", "--data-dir", dataDir,
			"--client-listen", fmt.Sprintf("127.0.0.1:%d", clientPort),
			"--http-listen", fmt.Sprintf("127.0.0.1:%d", httpPort),
			"--shutdown-grace", "10s",
			"--nats-auth", s.path("nats-auth.json"), "--http-tokens", s.path("http-tokens"),
			"--http-tls-cert", s.path("node.pem"), "--http-tls-key", s.path("node-key.pem"),
			"--nats-tls-cert", s.path("node.pem"), "--nats-tls-key", s.path("node-key.pem"),
			"--cluster-tls-cert", s.path("node.pem"), "--cluster-tls-key", s.path("node-key.pem"), "--cluster-tls-ca", s.path("ca.pem"),
		)
		nodes[i] = nd
	}
	for _, nd := range nodes {
		nd.Start(t)
	}
	for _, nd := range nodes {
		testutil.WaitFor(t, readyTimeout, func() error {
			if !nd.Running() {
				return fmt.Errorf("%s: process exited: %v\n%s", nd.name, nd.ExitErr(), nd.Tail(20))
			}
			st, _, body, err := proctest.Do(context.Background(), hc, http.MethodGet, nd.base+"/readyz", nil)
			if err == nil && st != http.StatusOK {
				err = fmt.Errorf("%d %s", st, body)
			}
			return err
		})
	}
	for i := range routes {
		routes[i] = strings.TrimPrefix(routes[i], "nats-route://")
	}
	return nodes, routes, hc
}

// bearerDo is one HTTPS request with a token.
func bearerDo(t *testing.T, hc *http.Client, token, method, url string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	return resp.StatusCode, []byte(b.String())
}

// natsAs connects to nd's NATS port as user over TLS with the CA.
func natsAs(nd *piNode, s secrets, user, password string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.RootCAs(s.path("ca.pem")), nats.NoReconnect(), nats.Timeout(5 * time.Second),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})}, opts...)
	if user != "" {
		opts = append(opts, nats.UserInfo(user, password), nats.CustomInboxPrefix(natsauth.InboxPrefix(user)))
	}
	return nats.Connect(nd.natsURL, opts...)
}

// deniedTo reports whether the server refused nc a publish (or, with sub,
// a subscription) to subject.
func deniedTo(t *testing.T, nc *nats.Conn, sub bool, subject string) bool {
	t.Helper()
	if sub {
		if _, err := nc.SubscribeSync(subject); err != nil {
			t.Fatal(err)
		}
	} else if err := nc.Publish(subject, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	err := nc.LastError()
	return errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), subject)
}

// A cluster run as docs/SECURITY.md says, from `pi-ctl gen-secrets`:
// every listener speaks TLS with the generated CA, every attack of issue
// 13's list is refused, and SIGHUP rotates a token and a NATS password
// without dropping the other clients.
func TestSecuredCluster(t *testing.T) {
	skipShort(t)
	t.Parallel()
	s := genSecrets(t)
	nodes, routeAddrs, hc := startSecuredCluster(t, s)
	admin, worker, reader := s.read(t, "http-admin.token"), s.read(t, "http-worker.token"), s.read(t, "http-reader.token")

	// TLS everywhere, verified against the generated CA.
	if st, _ := bearerDo(t, hc, admin, http.MethodGet, nodes[0].base+"/v1/status", nil); st != http.StatusOK {
		t.Fatalf("HTTPS status: %d", st)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get(strings.Replace(nodes[0].base, "https", "http", 1) + "/readyz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK { // net/http answers plain HTTP on a TLS port with 400
			t.Error("plain HTTP is served on the HTTPS port")
		}
	}
	if _, err := nats.Connect(strings.Replace(nodes[0].natsURL, "tls://", "nats://", 1), nats.UserInfo("worker", s.read(t, "nats-worker.password")),
		nats.NoReconnect(), nats.Timeout(5*time.Second)); err == nil {
		t.Error("a NATS client connected without TLS")
	}
	w, err := natsAs(nodes[1], s, "worker", s.read(t, "nats-worker.password"))
	if err != nil {
		t.Fatalf("worker over NATS TLS: %v", err)
	}
	defer w.Close()
	if st, err := w.TLSConnectionState(); err != nil || !st.HandshakeComplete {
		t.Errorf("the worker's NATS connection is not TLS: %v", err)
	}
	routeAddr := routeAddrs[2]
	if err := routeTLS(routeAddr, s, true); err != nil {
		t.Errorf("route TLS with the node certificate: %v", err)
	}
	if err := routeTLS(routeAddr, s, false); err == nil {
		t.Error("a route connection without the cluster certificate was admitted")
	}

	// NATS: no credentials, roles.
	if _, err := natsAs(nodes[0], s, "", ""); err == nil {
		t.Error("a NATS client without credentials connected")
	}
	for _, c := range []struct {
		sub     bool
		subject string
	}{{false, "$JS.API.STREAM.DELETE.PI_SESSIONS"}, {false, "$KV.PI_CURSORS.x.y"}, {true, "pi.sess.>"}, {false, "pi.v1.archive.run"}} {
		if !deniedTo(t, w, c.sub, c.subject) {
			t.Errorf("the worker (client role) may %s %s", map[bool]string{false: "publish", true: "subscribe"}[c.sub], c.subject)
		}
	}
	r, err := natsAs(nodes[2], s, "reader", s.read(t, "nats-reader.password"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !deniedTo(t, r, false, wire.OpAppend.Subject) {
		t.Error("the reader may append")
	}
	if deniedTo(t, r, true, "pi.sess.>") {
		t.Error("the reader may not follow the session subjects")
	}

	// Hardening items 2 and 4, against the real processes. A jsworker (role
	// jetstream) stores a request in a session's subject and has a consumer
	// deliver it to the admin operation pi.v1.archive.run: pi-node must not
	// run a delivery as a request (before, every session was archived, as
	// admin).
	js, err := natsAs(nodes[0], s, "jsworker", s.read(t, "nats-jsworker.password"))
	if err != nil {
		t.Fatal(err)
	}
	defer js.Close()
	bait := testutil.SessionID(t)
	st0, body0 := bearerDo(t, hc, worker, http.MethodPost, nodes[0].base+"/v1/sessions", createBody(bait, "/bait", time.Now()))
	if st0 != http.StatusCreated {
		t.Fatalf("worker create: %d %s", st0, body0)
	}
	if err := js.Publish("pi.sess."+testutil.SessionID(t), []byte(`{"olderThan":"0s"}`)); err != nil {
		t.Fatal(err)
	}
	cons, err := js.Request("$JS.API.CONSUMER.CREATE.PI_SESSIONS", []byte(`{"stream_name":"PI_SESSIONS","config":{"deliver_subject":"pi.v1.archive.run","deliver_group":"q","ack_policy":"explicit","deliver_policy":"all"}}`), 10*time.Second)
	if err != nil || strings.Contains(string(cons.Data), `"error"`) {
		var data []byte
		if cons != nil {
			data = cons.Data
		}
		t.Fatalf("the jetstream role's consumer (the attack's first step): %v %s", err, data)
	}
	testutil.WaitFor(t, 30*time.Second, testutil.Awaiting("a node audits the delivery as not a request", func() error {
		for _, nd := range nodes {
			if nd.LogContains("audit: not a request") {
				return nil
			}
		}
		return errors.New("no node logged it")
	}))
	for _, nd := range nodes {
		if nd.LogContains(`msg="audit: admin operation" who=nats transport=nats op=archive.run`) {
			t.Errorf("%s ran a JetStream delivery as the admin operation archive.run:\n%s", nd.name, nd.Tail(20))
		}
	}
	if st, body := bearerDo(t, hc, worker, http.MethodGet, nodes[1].base+"/v1/sessions/"+bait, nil); st != http.StatusOK {
		t.Errorf("the session after the delivery attack: %d %s (archived?)", st, body)
	}
	// Each user has its own inbox: the reader may not listen on the
	// shared one or on another user's, where the admin's replies go.
	for _, subj := range []string{"_INBOX.>", natsauth.InboxPrefix("admin") + ".>", natsauth.InboxPrefix("worker") + ".>"} {
		rr, err := natsAs(nodes[2], s, "reader", s.read(t, "nats-reader.password"))
		if err != nil {
			t.Fatal(err)
		}
		if !deniedTo(t, rr, true, subj) {
			t.Errorf("the reader may subscribe %s", subj)
		}
		rr.Close()
	}

	// pi-ctl, as an operator runs it, over both transports.
	if out, err := runCtl(t, "ls", "--server", nodes[0].natsURL, "--user", "worker", "--password", s.read(t, "nats-worker.password"), "--tls-ca", s.path("ca.pem")); err != nil {
		t.Errorf("pi-ctl ls over NATS: %v\n%s", err, out)
	}
	if out, err := runCtl(t, "status", "--http", nodes[0].base, "--token", admin, "--tls-ca", s.path("ca.pem")); err != nil {
		t.Errorf("pi-ctl status over HTTPS: %v\n%s", err, out)
	}
	privateCA(t, s, nodes[0], admin, worker)
	// A token that is not admin's sees the replicas as well, and is told
	// what it does not see (its status had no replica table at all).
	if out, err := runCtl(t, "status", "--http", nodes[0].base, "--token", worker, "--tls-ca", s.path("ca.pem")); err != nil ||
		!strings.Contains(out, "REPLICA") || !strings.Contains(out, "need an admin token") || strings.Count(out, " follower ") != 2 {
		t.Errorf("pi-ctl status with the worker's token: %v, want the replica table and a word on what needs an admin token:\n%s", err, out)
	}

	// HTTP scopes.
	created := struct {
		SessionID string `json:"sessionId"`
	}{}
	st, body := bearerDo(t, hc, worker, http.MethodPost, nodes[0].base+"/v1/sessions", createBody(testutil.SessionID(t), "/tenant-b/x", time.Now()))
	if st != http.StatusCreated {
		t.Fatalf("worker create: %d %s", st, body)
	}
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	if st, _ := bearerDo(t, hc, reader, http.MethodPost, nodes[0].base+"/v1/sessions/"+created.SessionID+"/entries", []byte(`{"entries":[{"type":"message","message":{"role":"user","content":"x"}}]}`)); st != http.StatusForbidden {
		t.Errorf("read token append: %d, want 403", st)
	}
	if st, _ := bearerDo(t, hc, reader, http.MethodPost, nodes[0].base+"/v1/archive/run", []byte(`{}`)); st != http.StatusForbidden {
		t.Errorf("read token archive run: %d, want 403", st)
	}

	// SIGHUP rotation: a tenant token is added, the worker's NATS password
	// changes; the reader's connection and HTTP keep-alives stay.
	tenant, err := runCtl(t, "token", "new", "tenant-a", "--scopes", "read,write", "--cwd-prefix", "/tenant-a", "--append", s.path("http-tokens"))
	if err != nil {
		t.Fatalf("pi-ctl token new: %v\n%s", err, tenant)
	}
	tenant = strings.TrimSpace(tenant)
	newPW, err := runCtl(t, "nats-user", "new", "worker", "--role", "client", "--append", s.path("nats-auth.json"))
	if err != nil {
		t.Fatalf("pi-ctl nats-user new: %v\n%s", err, newPW)
	}
	newPW = strings.TrimSpace(newPW)
	wClosed := make(chan struct{})
	w.SetClosedHandler(func(*nats.Conn) { close(wClosed) })
	for _, nd := range nodes {
		if err := nd.Send(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, 20*time.Second, func() error {
		for _, nd := range nodes {
			if !nd.LogContains("reload: NATS users") || !nd.LogContains("reload: tokens") {
				return fmt.Errorf("%s has not reloaded:\n%s", nd.name, nd.Tail(10))
			}
		}
		return nil
	})
	select {
	case <-wClosed:
	case <-time.After(20 * time.Second):
		t.Error("the worker's connection with the old password is still open")
	}
	if _, err := natsAs(nodes[1], s, "worker", s.read(t, "nats-worker.password")); err == nil {
		t.Error("the old worker password connects after the rotation")
	}
	w2, err := natsAs(nodes[1], s, "worker", newPW)
	if err != nil {
		t.Fatalf("the new worker password: %v", err)
	}
	defer w2.Close()
	if _, err := w2.Request(wire.OpList.Subject, []byte("{}"), 10*time.Second); err != nil {
		t.Errorf("list with the new password: %v", err)
	}
	if err := r.Flush(); err != nil || !r.IsConnected() {
		t.Errorf("the reader's connection after the rotation: %v", err)
	}
	if st, _ := bearerDo(t, hc, tenant, http.MethodGet, nodes[1].base+"/v1/sessions/"+created.SessionID, nil); st != http.StatusNotFound {
		t.Errorf("tenant token reads another tenant's session: %d, want 404", st)
	}
	if st, body := bearerDo(t, hc, tenant, http.MethodPost, nodes[1].base+"/v1/sessions", createBody(testutil.SessionID(t), "/tenant-a/p", time.Now())); st != http.StatusCreated {
		t.Errorf("tenant create in its prefix: %d %s", st, body)
	}
	if !nodes[1].LogContains("audit: nats forbidden") || !nodes[0].LogContains("audit: nats unauthorized") || !nodes[2].LogContains("audit: nats tls_failed") {
		t.Errorf("no audit lines for the refusals:\n%s\n%s\n%s", nodes[0].Tail(20), nodes[1].Tail(20), nodes[2].Tail(20))
	}
}

// routeTLS dials a route port as a server does (TLS, then the INFO),
// with or without the node certificate, and reports the handshake's outcome (TLS
// 1.3 reports a refused client certificate on the first read).
func routeTLS(addr string, s secrets, withCert bool) error {
	raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	cfg := &tls.Config{RootCAs: s.pool, ServerName: "127.0.0.1"}
	if withCert {
		cert, err := tls.LoadX509KeyPair(s.path("node.pem"), s.path("node-key.pem"))
		if err != nil {
			return err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	c := tls.Client(raw, cfg) // the listener starts with the handshake
	if err := c.Handshake(); err != nil {
		return err
	}
	info, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && !strings.HasPrefix(info, "INFO ") {
		err = fmt.Errorf("no INFO after the handshake: %q", info)
	}
	return err
}

// The real binary, started on every interface with nothing else, refuses
// at once with the documented message; on loopback it needs nothing
// (startSingleNode, used by other tests, passes no secret at all).
func TestFailClosedBinary(t *testing.T) {
	skipShort(t)
	t.Parallel()
	cmd := exec.Command(piNodeBin, "--data-dir", t.TempDir(), "--http-listen", "0.0.0.0:0", "--client-listen", "0.0.0.0:0")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("pi-node on 0.0.0.0 without auth: %v\n%s", err, out)
	}
	for _, want := range []string{"refusing to start", "the HTTP API on 0.0.0.0:0 has no auth: add --http-tokens FILE",
		"the NATS client port on 0.0.0.0:0 has no auth: add --nats-auth FILE", "--insecure"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	nd := startSingleNode(t)
	if err := proctest.Ready(nd.base); err != nil {
		t.Errorf("a loopback node without any secret: %v", err)
	}
}
