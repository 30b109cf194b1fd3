package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// The jetstream role may append anything with any headers to the session
// stream and the cursor bucket, create consumers, ask for the next
// messages and direct-get the bucket; nats-server checks neither a push
// consumer's deliver subject nor the reply subject of a pull request or a
// direct get against the role. These tests have the server deliver a
// stored {"olderThan":"0s"}, with an admin's forwarding headers, to the
// subjects pi-node serves: it runs none of them and archives nothing. The
// wait for each delivery's audit line is what says it arrived.

// TestDeliveryToServiceRunsNothing: to the micro service's pi.v1.<op>.
func TestDeliveryToServiceRunsNothing(t *testing.T) {
	a := newAttack(t)
	a.push("c1", "pi.v1.archive.run", "q", "explicit", nil)
	// With AckNone the reply is still $JS.ACK...
	a.push("c2", "pi.v1.archive.run", "q", "none", nil)
	a.pull("c3", "pi.v1.archive.run")
	a.directGet("pi.v1.archive.run")
	// Idle heartbeats need no stored message at all; they carry no reply.
	a.push("c4", "pi.v1.archive.restore", "q", "explicit", map[string]any{"filter_subject": "pi.sess.none", "idle_heartbeat": int64(100 * time.Millisecond)})
	const svc = `transport=nats op=archive.run outcome=not_a_request subject=`
	a.refused(
		svc+`pi.sess.bait reply=$JS.ACK.PI_SESSIONS.c1.`,
		svc+`pi.sess.bait reply=$JS.ACK.PI_SESSIONS.c2.`,
		svc+`pi.sess.bait reply=$JS.ACK.PI_SESSIONS.c3.`,
		svc+`pi.v1.archive.run reply=""`,
		`transport=nats op=archive.restore outcome=not_a_request subject=pi.v1.archive.restore reply=""`,
	)
}

// TestDeliveryToForwardRunsNothing: to pi.fwd.<k>.<op>, whose principal
// travels in headers. A push consumer there waits for a subscription to
// its very subject (holders subscribe pi.fwd.<k>.>); a pull request's
// messages and a direct get's answer do not wait.
func TestDeliveryToForwardRunsNothing(t *testing.T) {
	a := newAttack(t)
	a.push("c1", "pi.fwd.0.archive.run", "pi-node", "explicit", nil)
	a.pull("c2", "pi.fwd.0.archive.run")
	a.directGet("pi.fwd.0.archive.run")
	a.refused(
		`transport=forward op=- outcome=not_a_request subject=pi.sess.bait reply=$JS.ACK.PI_SESSIONS.c2.`,
		`transport=forward op=archive.run outcome=not_a_request subject=pi.fwd.0.archive.run reply=""`,
	)
}

// attack is one node with a jetstream-role worker and an admin, and live
// sessions the worker tries to have archived.
type attack struct {
	t      *testing.T
	logs   *testutil.SyncBuffer
	base   string
	w, adm *nats.Conn
}

const (
	liveSessions = 6
	bait         = "pi.sess.bait" // shard 0's stream; no session's subject
)

func newAttack(t *testing.T) *attack {
	t.Helper()
	auth := filepath.Join(t.TempDir(), "auth.json")
	f := natsauth.File{}
	for _, u := range []struct{ name, role string }{{"jsworker", natsauth.RoleJetStream}, {"admin", natsauth.RoleAdmin}} {
		h, err := bcrypt.GenerateFromPassword([]byte(u.name), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		f.Users = append(f.Users, natsauth.User{User: u.name, Password: string(h), Role: u.role})
	}
	writeFile(t, auth, string(f.Marshal()))
	// Two shards held by this one node: it answers pi.fwd.<k>.<op>.
	m, logs := startNode(t, func(c *Config) { c.NATSAuth, c.Shards, c.Hold = auth, 2, 1 })
	t.Cleanup(func() { m.Close(context.Background()) })
	a := &attack{t: t, logs: logs, base: "http://" + m.HTTPAddr}
	for range liveSessions {
		createSession(t, a.base)
	}
	var err error
	if a.adm, err = dialNode(m, "", "admin", "admin"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.adm.Close)
	testutil.WaitFor(t, 20*time.Second, func() error { // the holder serves shard 0 once caught up
		_, err := a.adm.Request("pi.fwd.0.status", []byte("{}"), 5*time.Second)
		return err
	})
	if a.w, err = dialNode(m, "", "jsworker", "jsworker"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.w.Close)
	// The stored request: an archive pass, with an admin's forwarding
	// headers.
	msg := nats.NewMsg(bait)
	msg.Data = []byte(`{"olderThan":"0s"}`)
	msg.Header.Set("Pi-Fwd-Who", "mallory")
	msg.Header.Set("Pi-Fwd-Scopes", "admin")
	if res, err := a.w.RequestMsg(msg, 10*time.Second); err != nil || !strings.Contains(string(res.Data), `"seq"`) {
		t.Fatalf("the worker's append of the bait: %v", err)
	}
	// The same in the cursor bucket, which takes any value.
	msg.Subject = "$KV.PI_CURSORS.bait.x"
	if res, err := a.w.RequestMsg(msg, 10*time.Second); err != nil || !strings.Contains(string(res.Data), `"seq"`) {
		t.Fatalf("the worker's put of the bait: %v", err)
	}
	return a
}

// api makes a JetStream API request as the worker; it must succeed.
func (a *attack) api(subject string, body any) {
	a.t.Helper()
	b, _ := json.Marshal(body)
	res, err := a.w.Request(subject, b, 10*time.Second)
	if err != nil || strings.Contains(string(res.Data), `"error"`) {
		a.t.Fatalf("%s: %v %s", subject, err, res.Data)
	}
}

// push creates a push consumer of the bait delivering to deliver.
func (a *attack) push(name, deliver, group, ack string, extra map[string]any) {
	a.t.Helper()
	cfg := map[string]any{"name": name, "deliver_subject": deliver, "deliver_group": group, "ack_policy": ack, "filter_subject": bait}
	for k, v := range extra {
		cfg[k] = v
	}
	a.api("$JS.API.CONSUMER.CREATE.PI_SESSIONS."+name+"."+cfg["filter_subject"].(string), map[string]any{"stream_name": "PI_SESSIONS", "config": cfg})
}

// pull creates a pull consumer of the bait and asks for it with reply
// subject to.
func (a *attack) pull(name, to string) {
	a.t.Helper()
	a.api("$JS.API.CONSUMER.CREATE.PI_SESSIONS."+name+"."+bait, map[string]any{"stream_name": "PI_SESSIONS",
		"config": map[string]any{"name": name, "ack_policy": "explicit", "filter_subject": bait}})
	if err := a.w.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.PI_SESSIONS."+name, to, []byte(`{"batch":1}`)); err != nil {
		a.t.Fatal(err)
	}
}

// directGet has the cursor bucket's bait sent to to.
func (a *attack) directGet(to string) {
	a.t.Helper()
	if err := a.w.PublishRequest("$JS.API.DIRECT.GET.KV_PI_CURSORS.$KV.PI_CURSORS.bait.x", to, nil); err != nil {
		a.t.Fatal(err)
	}
}

// refused waits for an audit line containing each of lines, failing as
// soon as a delivery runs; then every session is still there and an
// admin's own request runs.
func (a *attack) refused(lines ...string) {
	t := a.t
	t.Helper()
	if err := a.w.Flush(); err != nil || a.w.LastError() != nil {
		t.Fatalf("the jetstream role was refused: %v %v", err, a.w.LastError())
	}
	testutil.WaitFor(t, 20*time.Second, func() error {
		l := a.logs.String()
		if ran := grepLines(l, "audit: admin operation"); ran != "" {
			t.Fatalf("a delivery ran as an admin operation:\n%s", ran)
		}
		if n := a.sessions(); n != liveSessions {
			t.Fatalf("%d sessions left of %d", n, liveSessions)
		}
		for _, s := range lines {
			if !strings.Contains(l, `msg="audit: not a request" `+s) {
				return fmt.Errorf("no line %q in the log:\n%s", s, grepLines(l, "audit"))
			}
		}
		return nil
	})
	if n := a.sessions(); n != liveSessions {
		t.Errorf("%d sessions left of %d", n, liveSessions)
	}
	// Requests still run: the admin's, audited as such (nothing is
	// archived: 404).
	if _, err := a.adm.Request("pi.v1.archive.list", []byte("{}"), 10*time.Second); err != nil {
		t.Fatalf("an admin's archive.list: %v", err)
	}
	// The node replies, then logs the audit line: wait for it.
	testutil.WaitFor(t, 10*time.Second, func() error {
		if l := a.logs.String(); !strings.Contains(l, `msg="audit: admin operation" who=nats transport=nats op=archive.list outcome=not_found status=404`) {
			return fmt.Errorf("the admin's request was not audited:\n%s", grepLines(l, "audit"))
		}
		return nil
	})
}

// sessions counts the live sessions.
func (a *attack) sessions() int {
	a.t.Helper()
	var page struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	st, body := httpGet(a.t, a.base+"/v1/sessions")
	if st != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil {
		a.t.Fatalf("list: %d %s", st, body)
	}
	return len(page.Sessions)
}

// The cursor bucket refuses Nats-Rollup, whose "all" would purge every
// cursor in one publish the jetstream role may make; its keys stay, and
// it still takes writes.
func TestCursorBucketNoRollup(t *testing.T) {
	a := newAttack(t)
	roll := nats.NewMsg("$KV.PI_CURSORS.bait.y")
	roll.Header.Set("Nats-Rollup", "all")
	res, err := a.w.RequestMsg(roll, 10*time.Second)
	if err != nil || !strings.Contains(string(res.Data), "rollup not permitted") {
		t.Errorf("a rollup of the cursor bucket: %v %s", err, res.Data)
	}
	res, err = a.w.Request("$JS.API.DIRECT.GET.KV_PI_CURSORS.$KV.PI_CURSORS.bait.x", nil, 10*time.Second)
	if err != nil || res.Header.Get("Nats-Sequence") == "" {
		t.Errorf("a key after the rollup: %v %v", err, res.Header)
	}
	res, err = a.w.Request("$KV.PI_CURSORS.bait.z", []byte(`{}`), 10*time.Second)
	if err != nil || !strings.Contains(string(res.Data), `"seq"`) {
		t.Errorf("a write after the rollup: %v %s", err, res.Data)
	}
}
