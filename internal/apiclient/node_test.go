package apiclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/nodetest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// transports returns a client of each kind for node n.
func transports(t *testing.T, n *nodetest.Node) map[string]apiclient.Client {
	t.Helper()
	h, err := apiclient.NewHTTP(apiclient.HTTPOptions{URL: n.HTTPURL, Token: n.Token, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := apiclient.DialNATS(apiclient.NATSOptions{URL: n.NATSURL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); nc.Close() })
	return map[string]apiclient.Client{"HTTP": h, "NATS": nc}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// records builds a header and a chain of n messages with pi's constructors.
func records(t *testing.T, sid string, n int) []session.Record {
	t.Helper()
	h := tree.NewHeader(sid, "2026-11-30T08:51:24.626Z", "/w <&>", "")
	recs := []session.Record{{Type: "session", Data: h.Raw}}
	parent := ""
	for i := range n {
		recs = append(recs, entry(t, fmt.Sprintf("e%07d", i), parent))
		parent = recs[len(recs)-1].ID
	}
	return recs
}

// entry is a user message; its text holds characters that JSON encoders
// like to escape.
func entry(t *testing.T, id, parent string) session.Record {
	t.Helper()
	msg := fmt.Appendf(nil, `{"role":"user","content":"%s <&> `+"\u2028"+` é","timestamp":1}`, id)
	e, err := tree.NewMessage(tree.Meta{ID: id, ParentID: parent, Timestamp: "2026-11-30T08:51:24.627Z"}, msg)
	if err != nil {
		t.Fatal(err)
	}
	return session.Record{Type: e.Type(), ID: e.ID, Parent: e.ParentID, Data: e.Raw}
}

// TestErrorsFromNode: pi-node's error replies unwrap to the engine's
// sentinels on both transports.
func TestErrorsFromNode(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	for name, c := range transports(t, n) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			sid := testutil.SessionID(t)
			_, err := c.Do(ctx, wire.GetRequest{SessionID: sid})
			if !errors.Is(err, wire.ErrNotFound) || !apiclient.IsStatus(err, http.StatusNotFound) {
				t.Fatalf("get of a missing session: %v", err)
			}
			create := wire.CreateRequest{Header: json.RawMessage(fmt.Sprintf(`{"id":%q}`, sid)), Entries: []json.RawMessage{json.RawMessage(`{"type":"message","message":{"role":"user","content":"q"}}`)}}
			var res wire.WriteResult
			if err := apiclient.Call(ctx, c, create, &res); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Do(ctx, create); !errors.Is(err, wire.ErrExists) || errors.Is(err, wire.ErrConflict) {
				t.Fatalf("second create: %v", err)
			}
			staleSeq := res.LastSeq - 1
			stale := wire.AppendRequest{SessionID: sid, ExpectLastSeq: &staleSeq,
				Entries: []json.RawMessage{json.RawMessage(`{"type":"message","message":{"role":"user","content":"r"}}`)}}
			_, err = c.Do(ctx, stale)
			var ce *wire.ConflictError
			if !errors.As(err, &ce) || ce.LastSeq != res.LastSeq || !errors.Is(err, wire.ErrConflict) {
				t.Fatalf("stale append: %v", err)
			}
			bad := wire.AppendRequest{SessionID: sid, Entries: []json.RawMessage{json.RawMessage(`{"type":"message","parentId":"zzzz","message":{"role":"user","content":"hi"}}`)}}
			_, err = c.Do(ctx, bad)
			var fe *wire.FieldError
			if !errors.As(err, &fe) || fe.Field != "entries[0].parentId" || strings.HasPrefix(fe.Reason, fe.Field) || !errors.Is(err, wire.ErrInvalid) {
				t.Fatalf("unknown parent: %v (%#v)", err, fe)
			}
		})
	}
	tok := nodetest.Start(t, nodetest.Options{Token: "s3cret"})
	h, _ := apiclient.NewHTTP(apiclient.HTTPOptions{URL: tok.HTTPURL})
	if _, err := h.Do(ctxT(t), wire.StatusRequest{}); !errors.Is(err, wire.ErrUnauthorized) {
		t.Fatalf("no token: %v", err)
	}
	gone, _ := apiclient.NewHTTP(apiclient.HTTPOptions{URL: "http://127.0.0.1:1", Timeout: time.Second})
	if _, err := gone.Do(ctxT(t), wire.StatusRequest{}); !errors.Is(err, wire.ErrUnavailable) || !apiclient.Temporary(err) {
		t.Fatalf("no node: %v", err)
	}
}
