package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/wire"
)

// nest writes the nested tree reply ({"tree","leafId"}, the server's key
// order) from a flat one, so that the two forms can be compared byte for
// byte at a depth encoding/json cannot decode. It checks on the way that
// every node is listed once, after its parent, with a parentId that agrees
// with the children lists.
func nest(t *testing.T, f wire.TreeFlatReply) []byte {
	t.Helper()
	byID := map[string]*wire.TreeFlatNode{}
	for i := range f.Nodes {
		n := &f.Nodes[i]
		if byID[n.ID] != nil {
			t.Fatalf("node %q listed twice", n.ID)
		}
		if n.ParentID != nil && byID[*n.ParentID] == nil {
			t.Fatalf("node %q listed before its parent %q", n.ID, *n.ParentID)
		}
		byID[n.ID] = n
	}
	str := func(s string) []byte { b, _ := json.Marshal(s); return b }
	var out []byte
	// Iterative, as the server: a recursive walk 5,000 deep is fine in Go,
	// but the point is depth.
	type frame struct {
		ids  []string
		k    int
		root bool
	}
	out = append(out, `{"tree":[`...)
	stack := []frame{{ids: f.Roots, root: true}}
	seen := 0
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.k == len(top.ids) {
			stack = stack[:len(stack)-1]
			if !top.root {
				out = append(out, "]}"...)
			}
			continue
		}
		if top.k > 0 {
			out = append(out, ',')
		}
		n := byID[top.ids[top.k]]
		top.k++
		if n == nil {
			t.Fatalf("%q is listed as a root or a child but is no node", top.ids[top.k-1])
		}
		seen++
		if n.Entry != nil {
			out = append(out, `{"entry":`...)
			out = append(out, n.Entry...)
		} else {
			out = append(out, `{"id":`...)
			out = append(out, str(n.ID)...)
			out = append(out, `,"type":`...)
			out = append(out, str(n.Type)...)
		}
		if n.Label != nil {
			out = append(out, `,"label":`...)
			out = append(out, str(*n.Label)...)
		}
		if n.LabelTimestamp != nil {
			out = append(out, `,"labelTimestamp":`...)
			out = append(out, n.LabelTimestamp...)
		}
		out = append(out, `,"children":[`...)
		for _, c := range n.Children {
			if p := byID[c].ParentID; p == nil || *p != n.ID {
				t.Fatalf("node %q is a child of %q but has parentId %v", c, n.ID, p)
			}
		}
		stack = append(stack, frame{ids: n.Children})
	}
	if seen != len(f.Nodes) {
		t.Fatalf("%d nodes reached from the roots, %d listed", seen, len(f.Nodes))
	}
	out = append(out, `],"leafId":`...)
	if f.LeafID == nil {
		out = append(out, "null"...)
	} else {
		out = append(out, str(*f.LeafID)...)
	}
	return append(out, '}')
}

// TestTreeFlat: form=flat lists the nested form's nodes, fields and order,
// over HTTP and NATS, with include=entries too; a linear 5,000-entry
// session's nested tree is past encoding/json's depth limit, its flat one
// is not.
func TestTreeFlat(t *testing.T) {
	e, nc, _ := natsEnv(t)

	// Two roots, a branch point, a label.
	res := e.create(userMsg("u1", "hi"), assistantMsg("a"), `{"type":"label","id":"l1","targetId":"u1","label":"start"}`)
	sid := res.SessionID
	e.ok(200, "POST", "/v1/sessions/"+sid+"/entries", `{"entries":[`+
		`{"type":"message","id":"b1","parentId":"u1","message":{"role":"user","content":"other","timestamp":3}},`+
		`{"type":"message","id":"r2","parentId":null,"message":{"role":"user","content":"again","timestamp":4}}]}`, nil)
	base := "/v1/sessions/" + sid + "/tree"
	for _, q := range []string{"", "include=entries", "leaf=u1", "leaf=null&include=entries"} {
		nested := e.ok(200, "GET", base+"?"+q, nil, nil)
		var f wire.TreeFlatReply
		e.ok(200, "GET", base+"?form=flat&"+q, nil, &f)
		if got := nest(t, f); !bytes.Equal(got, nested) {
			t.Errorf("%s: the flat form nests to\n%s\nthe nested form is\n%s", q, got, nested)
		}
		if len(f.Nodes) != 5 || len(f.Roots) != 2 || f.Roots[1] != "r2" || len(f.Nodes[0].Children) != 2 {
			t.Fatalf("%s: %+v", q, f)
		}
		if strings.Contains(q, "entries") != (f.Nodes[0].Entry != nil) {
			t.Errorf("%s: node %+v", q, f.Nodes[0])
		}

		// NATS: the same bytes.
		body := fmt.Sprintf(`{"sessionId":%q,"form":"flat"`, sid)
		if strings.Contains(q, "entries") {
			body += `,"include":"entries"`
		}
		if strings.Contains(q, "leaf=u1") {
			body += `,"leaf":"u1"`
		}
		if strings.Contains(q, "leaf=null") {
			body += `,"leaf":null`
		}
		overHTTP := e.ok(200, "GET", base+"?form=flat&"+q, nil, nil)
		if got := reqOK(t, nc, "tree", body+"}", nil); !bytes.Equal(got, overHTTP) {
			t.Errorf("pi.v1.tree %s: %s, HTTP gave %s", body, got, overHTTP)
		}
	}

	e.fails(400, wire.CodeInvalid, "form", "GET", base+"?form=nested", nil)
	reqFails(t, nc, "tree", fmt.Sprintf(`{"sessionId":%q,"form":"Flat"}`, sid), 400, wire.CodeInvalid, "form")

	// A linear session of 5,000 entries, appended in batches under the
	// atomic batch limit (each entry's parent the one before).
	const n = 5000
	sid = e.create(userMsg("e0", "m")).SessionID
	base = "/v1/sessions/" + sid + "/tree"
	for i := 1; i < n; {
		var batch []string
		for ; i < n && len(batch) < 500; i++ {
			batch = append(batch, userMsg(fmt.Sprintf("e%d", i), "m"))
		}
		e.ok(200, "POST", "/v1/sessions/"+sid+"/entries", `{"entries":[`+strings.Join(batch, ",")+`]}`, nil)
	}
	var f wire.TreeFlatReply
	e.ok(200, "GET", base+"?form=flat", nil, &f)
	if len(f.Nodes) != n || len(f.Roots) != 1 || f.LeafID == nil || *f.LeafID != fmt.Sprintf("e%d", n-1) {
		t.Fatalf("flat tree of %d entries: %d nodes, roots %v, leaf %v", n, len(f.Nodes), f.Roots, f.LeafID)
	}
	// The nested form from the handler itself: the spec's validator
	// decodes with encoding/json, which is the point.
	srv := httptest.NewServer(e.api.Handler())
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL + base)
	if err != nil {
		t.Fatal(err)
	}
	nested, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("nested tree: %d %v", resp.StatusCode, err)
	}
	var v any
	if err := json.Unmarshal(nested, &v); err == nil || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Errorf("the nested tree of %d entries decoded with encoding/json (err %v): the flat form's reason is gone", n, err)
	}
	if got := nest(t, f); !bytes.Equal(got, nested) {
		t.Errorf("the flat form of %d entries does not nest to the nested form", n)
	}
}
