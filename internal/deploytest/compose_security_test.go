package deploytest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// checkAttacks runs the attacks the secured compose file must stop, through
// pi-node-1's published ports: NATS without credentials; the worker (role
// client) deleting the stream, writing cursors behind the API, reading
// every session's live entries; the reader appending; an HTTP read token
// appending and running the archive; a route connection without the
// cluster certificate. And the TLS handshakes that must succeed: 8080,
// 4222 and 6222 with the deployment's CA (and, on 6222, its certificate).
func (c *cluster) checkAttacks(t *testing.T, sid string) {
	t.Helper()
	natsPort := strings.TrimSpace(c.must("port", "pi-node-1", "4222"))
	routePort := strings.TrimSpace(c.must("port", "pi-node-1", "6222"))
	httpPort := strings.TrimPrefix(c.nodes[0].url(), "https://")

	// No credentials: the connection is refused.
	if nc, err := c.sec.natsConnect(natsPort, ""); err == nil {
		nc.Close()
		t.Error("attack: a NATS client without credentials connected")
	} else {
		t.Logf("attack refused: NATS without credentials: %v", err)
	}
	// A wrong password neither.
	if nc, err := nats.Connect("tls://"+natsPort, nats.IgnoreDiscoveredServers(), nats.NoReconnect(), nats.Timeout(5*time.Second),
		nats.Secure(c.sec.tlsConfig(false)), nats.UserInfo("worker", "not-the-password")); err == nil {
		nc.Close()
		t.Error("attack: a NATS client with a wrong password connected")
	}
	// Plain text to the TLS port: refused.
	if nc, err := nats.Connect("nats://"+natsPort, nats.IgnoreDiscoveredServers(), nats.NoReconnect(), nats.Timeout(5*time.Second),
		nats.UserInfo("worker", c.sec.passwords["worker"])); err == nil {
		if !nc.TLSRequired() {
			t.Error("attack: a NATS client connected without TLS")
		}
		nc.Close()
	}

	// Permission violations: each on a connection of its own, reported by
	// the server asynchronously (LastError after a Flush).
	denied := func(user, what string, act func(*nats.Conn) error) {
		t.Helper()
		nc, err := c.sec.natsConnect(natsPort, user)
		if err != nil {
			t.Errorf("NATS as %s: %v", user, err)
			return
		}
		defer nc.Close()
		if err := act(nc); err != nil && !errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("%s %s: %v", user, what, err)
			return
		}
		if err := nc.FlushTimeout(5 * time.Second); err != nil && !errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("%s %s: flush: %v", user, what, err)
		}
		// The server's -ERR may trail the PONG by a moment.
		deadline := time.Now().Add(3 * time.Second)
		for !errors.Is(nc.LastError(), nats.ErrPermissionViolation) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if err := nc.LastError(); !errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("attack: %s may %s (last error %v, want a permissions violation)", user, what, err)
		} else {
			t.Logf("attack refused: %s %s: %v", user, what, err)
		}
	}
	denied("worker", "publish $JS.API.STREAM.DELETE.PI_SESSIONS", func(nc *nats.Conn) error {
		return nc.Publish("$JS.API.STREAM.DELETE.PI_SESSIONS", nil)
	})
	denied("worker", "publish $KV.PI_CURSORS.x", func(nc *nats.Conn) error {
		return nc.Publish("$KV.PI_CURSORS.x", []byte("{}"))
	})
	denied("worker", "subscribe pi.sess.>", func(nc *nats.Conn) error {
		_, err := nc.SubscribeSync("pi.sess.>")
		return err
	})
	denied("reader", "call pi.v1.append", func(nc *nats.Conn) error {
		return nc.PublishRequest("pi.v1.append", nats.NewInbox(), []byte(`{}`))
	})
	// The stream survived the worker's attempt (/v1/status shows JetStream
	// to admin tokens only; do sends the admin's for it).
	var st status
	if err := c.nodes[0].getJSON("/v1/status", &st); err != nil || st.JetStream.Stream.LastSeq == 0 {
		t.Errorf("the stream after the attacks: %+v %v", st.JetStream, err)
	}

	// HTTP: no token, then the read token on write and admin operations.
	n := c.nodes[0]
	if r, err := n.doAs("", http.MethodGet, "/v1/sessions/"+sid, nil, 10*time.Second); err != nil || r.status != http.StatusUnauthorized && r.status != http.StatusForbidden {
		t.Errorf("attack: GET without a token: %v %v, want 401 (or 403)", r, err)
	}
	read := c.sec.tokens["reader"]
	if r, err := n.doAs(read, http.MethodGet, "/v1/sessions/"+sid, nil, 10*time.Second); err != nil || r.status != http.StatusOK {
		t.Errorf("GET with the read token: %v %v, want 200", r, err)
	}
	for _, req := range []struct{ method, path string }{
		{http.MethodPost, "/v1/sessions/" + sid + "/entries"},
		{http.MethodPost, "/v1/archive/run"},
	} {
		body := entryBody("attack-0001")
		if strings.HasSuffix(req.path, "/run") {
			body = []byte(`{}`)
		}
		r, err := n.doAs(read, req.method, req.path, body, 10*time.Second)
		if err != nil || r.status != http.StatusForbidden {
			t.Errorf("attack: %s %s with the read token: %v %v, want 403", req.method, req.path, r, err)
		} else {
			t.Logf("attack refused: %s %s with the read token: %s", req.method, req.path, r)
		}
	}
	c.checkAbsent(t, sid, "attack-0001")

	// TLS: 8080 and the route port speak TLS from the first byte; the NATS
	// client port sends INFO in plain text, then the client starts TLS.
	if err := tlsProbe(httpPort, false, c.sec.tlsConfig(false)); err != nil {
		t.Errorf("TLS on the HTTP port %s: %v", httpPort, err)
	}
	if err := tlsProbe(natsPort, true, c.sec.tlsConfig(false)); err != nil {
		t.Errorf("TLS on the NATS port %s: %v", natsPort, err)
	}
	if err := tlsProbe(routePort, false, c.sec.tlsConfig(true)); err != nil {
		t.Errorf("mutual TLS on the route port %s with the cluster certificate: %v", routePort, err)
	}
	err := tlsProbe(routePort, false, c.sec.tlsConfig(false))
	if err == nil {
		t.Error("attack: the route port accepted a TLS connection without a client certificate")
	} else {
		t.Logf("attack refused: route port without the cluster certificate: %v", err)
	}
	if err := tlsProbe(routePort, false, &tls.Config{InsecureSkipVerify: true}); err == nil { //nolint:gosec // the attacker's view
		t.Error("attack: the route port accepted a TLS connection without a client certificate (unverified server)")
	}
}

// tlsProbe makes a TLS connection to hostPort and reports whether the
// server kept it: after the handshake it waits a moment for an alert (TLS
// 1.3 servers reject a client certificate after the client's handshake is
// done). natsInfo: read the server's plain-text INFO line first.
func tlsProbe(hostPort string, natsInfo bool, cfg *tls.Config) error {
	raw, err := net.DialTimeout("tcp", hostPort, 5*time.Second)
	if err != nil {
		return err
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(5 * time.Second))
	if natsInfo {
		line, err := bufio.NewReader(raw).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "INFO ") {
			return errors.New("no INFO from the server: " + line)
		}
		if !strings.Contains(line, `"tls_required":true`) {
			return errors.New("the server does not require TLS: " + strings.TrimSpace(line))
		}
	}
	host, _, _ := net.SplitHostPort(hostPort)
	cfg = cfg.Clone()
	cfg.ServerName = host
	conn := tls.Client(raw, cfg)
	if err := conn.Handshake(); err != nil {
		return err
	}
	// Anything but a timeout is the server's refusal (an alert, or closing).
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 1)
	if _, err := conn.Read(buf); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	}
	return nil
}
