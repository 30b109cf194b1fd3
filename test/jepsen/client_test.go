//go:build linux

package jepsen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/wire"

	"github.com/nats-io/nats.go"
)

const (
	// attemptTimeout bounds one request; an append without an answer by
	// then is retried with the same bytes.
	attemptTimeout = 3 * time.Second
	// appendDeadline bounds an append with its retries: past it the
	// outcome is what the attempts make it (unknown, mostly).
	appendDeadline = 12 * time.Second
	// readLimit is the entries page: the sessions stay below it, and a
	// read that does not is marked truncated and not checked.
	readLimit = 10000
)

// class is what one attempt's answer says about its effect.
type class int

const (
	classOK        class = iota
	classRejected        // a 4xx: the server refused it
	classNotSent         // never reached a server (refused connection, no responders)
	classAmbiguous       // anything else: it may have taken effect
)

// answer is one attempt's answer, whichever transport carried it.
type answer struct {
	class  class
	status int
	header func(string) string
	body   []byte
	err    string
}

// sessionState is what a client knows of one session.
type sessionState struct {
	parent string // its last acknowledged entry there ("" before: a root)
	known  uint64 // the highest lastSeq it has seen of the session
	mine   uint64 // the sequence of its last acknowledged append there
}

// client is one sticky client: one node, one transport.
type client struct {
	idx       int
	node      *piNode
	transport string // http or nats
	hc        *http.Client
	nc        *nats.Conn
	rec       *recorder
	rng       *rand.Rand
	sessions  []string
	state     map[string]*sessionState
	n         int // entries made, for ids
}

func newClient(idx int, node *piNode, transport string, rec *recorder, seed int64, sessions []string) (*client, error) {
	c := &client{idx: idx, node: node, transport: transport, rec: rec,
		rng:      rand.New(rand.NewPCG(uint64(seed), uint64(idx))),
		sessions: sessions, state: map[string]*sessionState{}}
	for _, s := range sessions {
		c.state[s] = &sessionState{}
	}
	if transport == "http" {
		c.hc = &http.Client{Timeout: attemptTimeout, Transport: bearer{}}
		return c, nil
	}
	// Sticky: only this node's server, never one it learns of, and
	// reconnecting to it for ever (it comes back after a kill).
	nc, err := nats.Connect(node.natsURL, nats.UserInfo(natsUser, natsPassword), nats.CustomInboxPrefix(natsauth.InboxPrefix(natsUser)), nats.IgnoreDiscoveredServers(), nats.DontRandomize(),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.Timeout(2*time.Second),
		nats.Name(fmt.Sprintf("jepsen client %d", idx)))
	if err != nil {
		return nil, fmt.Errorf("client %d: connect to %s: %w", idx, node.natsURL, err)
	}
	c.nc = nc
	return c, nil
}

func (c *client) close() {
	if c.nc != nil {
		c.nc.Close()
	}
	if c.hc != nil {
		c.hc.CloseIdleConnections()
	}
}

// run makes operations until ctx ends.
func (c *client) run(ctx context.Context) {
	for ctx.Err() == nil {
		sid := c.sessions[c.rng.IntN(len(c.sessions))]
		st := c.state[sid]
		if c.rng.Float64() < 0.5 {
			var expect *uint64
			if st.known > 0 && c.rng.Float64() < 0.35 {
				e := st.known
				expect = &e
			}
			c.append(ctx, sid, expect)
		} else {
			kind := "entries"
			if c.rng.Float64() < 0.35 {
				kind = "export"
			}
			var minSeq uint64
			if st.mine > 0 && c.rng.Float64() < 0.3 {
				minSeq = st.mine
			}
			c.read(ctx, sid, kind, minSeq, c.rng.Float64() < 0.25)
		}
		// A little think time: two cores are shared with other suites.
		time.Sleep(time.Duration(c.rng.IntN(15)) * time.Millisecond)
	}
}

// append appends one entry (a child of the client's previous one in the
// session), retrying with the same bytes until acknowledged, refused, or
// past the deadline.
func (c *client) append(ctx context.Context, sid string, expect *uint64) {
	st := c.state[sid]
	c.n++
	id := fmt.Sprintf("c%02d-%05d", c.idx, c.n)
	raw, _ := json.Marshal(proctest.NewEntry(id, st.parent, fmt.Sprintf("client %d entry %d", c.idx, c.n), time.Now()))
	op := &Op{Client: c.idx, Node: c.node.name, Transport: c.transport, Kind: KindAppend, Session: sid,
		Entry: id, Parent: st.parent, Expect: expect, Invoke: c.rec.now()}
	req := wire.AppendRequest{SessionID: sid, Entries: []json.RawMessage{raw}, ExpectLastSeq: expect}
	deadline := time.Now().Add(appendDeadline)
	maybe := false // an earlier attempt may have taken effect
	var a answer
	for attempt := 0; ; attempt++ {
		op.Attempts++
		a = c.send(ctx, wire.OpAppend, sid, req, nil)
		if a.class == classOK || a.class == classRejected {
			break
		}
		maybe = maybe || a.class == classAmbiguous
		// Not ctx: an append in flight when the run ends still gets its
		// retries, so that fewer outcomes stay unknown.
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(min(100*time.Millisecond<<min(attempt, 2), 400*time.Millisecond))
	}
	op.Complete, op.Status, op.Err = c.rec.now(), a.status, a.err
	op.Served = a.header("Pi-Node")
	switch {
	case a.class == classOK:
		var wr wire.WriteResult
		if err := json.Unmarshal(a.body, &wr); err != nil || len(wr.Entries) != 1 || wr.Entries[0].ID != id {
			op.Outcome, op.Err = Unknown, fmt.Sprintf("reply %s: %v", a.body, err)
			break
		}
		op.Outcome, op.Seq, op.LastSeq = OK, wr.Entries[0].Seq, wr.LastSeq
		st.parent, st.known, st.mine = id, max(st.known, wr.LastSeq), max(st.mine, wr.Entries[0].Seq)
	case maybe:
		op.Outcome = Unknown
	default: // refused, or never delivered
		op.Outcome, op.Conflict = Fail, a.status == http.StatusConflict
	}
	c.rec.add(op)
}

// read reads the session's entries or export once.
func (c *client) read(ctx context.Context, sid, kind string, minSeq uint64, strong bool) {
	op := &Op{Client: c.idx, Node: c.node.name, Transport: c.transport, Kind: KindRead, Session: sid,
		Read: kind, MinSeq: minSeq, Strong: strong, Invoke: c.rec.now(), Attempts: 1}
	q := url.Values{}
	consistency := ""
	if strong {
		consistency = wire.ConsistencyStrong
		q.Set("consistency", consistency)
	}
	if minSeq > 0 {
		q.Set("minSeq", strconv.FormatUint(minSeq, 10))
	}
	var a answer
	if kind == "entries" {
		q.Set("limit", strconv.Itoa(readLimit))
		a = c.send(ctx, wire.OpEntries, sid, wire.EntriesRequest{SessionID: sid, Limit: readLimit, MinSeq: minSeq, Consistency: consistency}, q)
	} else {
		a = c.send(ctx, wire.OpExport, sid, wire.ExportRequest{SessionID: sid, MinSeq: minSeq, Consistency: consistency}, q)
	}
	op.Complete, op.Status, op.Err = c.rec.now(), a.status, a.err
	op.Served = a.header("Pi-Node")
	if a.class != classOK {
		op.Outcome = Fail // a read has no effect
		c.rec.add(op)
		return
	}
	var err error
	if kind == "entries" {
		var last uint64
		op.Entries, last, err = parseEntries(a.body)
		op.LastSeq = last
		if n := len(op.Entries); n == readLimit && op.Entries[n-1].Seq < last {
			op.Truncated = true
		}
		c.state[sid].known = max(c.state[sid].known, last)
	} else {
		op.Entries, err = parseExport(a.body)
	}
	if err != nil {
		op.Outcome, op.Err = Fail, err.Error()
		c.rec.add(op)
		return
	}
	op.Outcome = OK
	op.Applied, op.Lag = headerU64(a.header("Pi-Applied-Seq")), headerU64(a.header("Pi-Lag"))
	op.Stale = a.header("Pi-Stale") != ""
	c.rec.add(op)
}

func headerU64(s string) *uint64 {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return nil
	}
	return &v
}

// parseEntries reads an entries reply: ids and seqs, and lastSeq.
func parseEntries(body []byte) ([]Entry, uint64, error) {
	var rep wire.EntriesReply
	if err := json.Unmarshal(body, &rep); err != nil {
		return nil, 0, fmt.Errorf("entries reply: %w", err)
	}
	out := make([]Entry, 0, len(rep.Entries))
	for _, se := range rep.Entries {
		var e struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(se.Entry, &e); err != nil {
			return nil, 0, fmt.Errorf("entry at seq %d: %w", se.Seq, err)
		}
		out = append(out, Entry{ID: e.ID, Seq: se.Seq})
	}
	return out, rep.LastSeq, nil
}

// parseExport reads the entry ids of a pi JSONL file, in file order.
func parseExport(body []byte) ([]Entry, error) {
	var out []Entry
	for i, line := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("export line %d: %w", i+1, err)
		}
		if e.Type != "session" {
			out = append(out, Entry{ID: e.ID})
		}
	}
	return out, nil
}

// send makes one attempt of op over the client's transport: over HTTP at
// its route with q as the query; over NATS to its subject with req as the
// body.
func (c *client) send(ctx context.Context, op wire.Op, sid string, req any, q url.Values) answer {
	body, err := json.Marshal(req)
	if err != nil {
		return answer{class: classRejected, err: err.Error()}
	}
	if c.transport == "nats" {
		return c.sendNATS(op, body)
	}
	path := op.Path
	if sid != "" {
		path = replaceID(path, sid)
	}
	u := c.node.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var payload []byte
	if op.Method != http.MethodGet {
		payload = body
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attemptTimeout)
	defer cancel()
	st, hdr, data, err := proctest.Do(actx, c.hc, op.Method, u, payload)
	a := answer{status: st, body: data, header: func(k string) string { return hdr.Get(k) }}
	switch {
	case err != nil && errors.Is(err, syscall.ECONNREFUSED):
		a.class, a.err = classNotSent, proctest.ErrorKind(st, err)
	case err != nil:
		a.class, a.err = classAmbiguous, proctest.ErrorKind(st, err)
	case st == op.Status:
		a.class = classOK
	case st >= 400 && st < 500:
		a.class, a.err = classRejected, fmt.Sprintf("http %d: %s", st, bytes.TrimSpace(data))
	default:
		a.class, a.err = classAmbiguous, fmt.Sprintf("http %d: %s", st, bytes.TrimSpace(data))
	}
	return a
}

// replaceID fills the route's {id}.
func replaceID(path, sid string) string {
	return string(bytes.Replace([]byte(path), []byte("{id}"), []byte(url.PathEscape(sid)), 1))
}

func (c *client) sendNATS(op wire.Op, body []byte) answer {
	msg, err := c.nc.Request(op.Subject, body, attemptTimeout)
	if err != nil {
		a := answer{class: classAmbiguous, err: "nats: " + err.Error(), header: func(string) string { return "" }}
		if errors.Is(err, nats.ErrNoResponders) {
			a.class = classNotSent
		}
		return a
	}
	a := answer{body: msg.Data, header: func(k string) string { return msg.Header.Get(k) }}
	code := msg.Header.Get("Nats-Service-Error-Code")
	if code == "" {
		a.class, a.status = classOK, op.Status
		return a
	}
	a.status, _ = strconv.Atoi(code)
	a.err = fmt.Sprintf("nats %s: %s", code, msg.Header.Get("Nats-Service-Error"))
	if a.status >= 400 && a.status < 500 {
		a.class = classRejected
	} else {
		a.class = classAmbiguous
	}
	return a
}

// createSessions creates the sessions through the first node, retrying
// across the nodes, and records each create in the history.
func createSessions(ctx context.Context, nodes []*piNode, rec *recorder, sids []string) error {
	for _, sid := range sids {
		body, _ := json.Marshal(map[string]any{"header": map[string]any{
			"type": "session", "version": 3, "id": sid, "cwd": "/jepsen/" + short(sid), "timestamp": proctest.Stamp(time.Now()),
		}, "entries": []any{}})
		op := &Op{Client: -1, Kind: KindCreate, Session: sid, Transport: "http", Invoke: rec.now()}
		var last string
		for attempt := 0; ctx.Err() == nil; attempt++ {
			nd := nodes[attempt%len(nodes)]
			op.Node, op.Attempts = nd.name, attempt+1
			st, _, data, err := proctest.Do(ctx, probe, http.MethodPost, nd.base+"/v1/sessions", body)
			if err == nil && st == http.StatusCreated {
				var wr wire.WriteResult
				if err := json.Unmarshal(data, &wr); err != nil {
					return err
				}
				op.Outcome, op.Seq, op.LastSeq = OK, wr.LastSeq, wr.LastSeq
				break
			}
			if err == nil && st != http.StatusServiceUnavailable {
				return fmt.Errorf("create %s via %s: %d %s", sid, nd.name, st, data)
			}
			last = proctest.ErrorKind(st, err)
			time.Sleep(100 * time.Millisecond)
		}
		if op.Outcome != OK {
			return fmt.Errorf("create %s: %v (last: %s)", sid, ctx.Err(), last)
		}
		op.Complete = rec.now()
		rec.add(op)
	}
	return nil
}

// natsRouting asks each node's embedded server n times for pi.v1.status
// and counts which pi-node answered: docs/API.md says the one on the
// server the client is connected to; nats-server may pick any member of
// the queue group.
func natsRouting(nodes []*piNode, n int) (map[string]map[string]int, error) {
	out := map[string]map[string]int{}
	for _, nd := range nodes {
		nc, err := nats.Connect(nd.natsURL, nats.UserInfo(natsUser, natsPassword), nats.CustomInboxPrefix(natsauth.InboxPrefix(natsUser)), nats.IgnoreDiscoveredServers(), nats.Timeout(2*time.Second))
		if err != nil {
			return nil, err
		}
		out[nd.name] = map[string]int{}
		for range n {
			msg, err := nc.Request(wire.OpStatus.Subject, []byte("{}"), attemptTimeout)
			if err != nil {
				nc.Close()
				return nil, fmt.Errorf("status via %s: %w", nd.name, err)
			}
			var st wire.StatusReply
			if err := json.Unmarshal(msg.Data, &st); err != nil {
				nc.Close()
				return nil, fmt.Errorf("status via %s: %w", nd.name, err)
			}
			out[nd.name][st.Node]++
		}
		nc.Close()
	}
	return out, nil
}
