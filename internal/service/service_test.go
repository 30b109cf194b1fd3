package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

func newService(t *testing.T, b backend) *service.Service {
	return &service.Service{Log: b.log, Store: openStore(t, b), Cursors: b.cursors}
}

func raws(entries ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(entries))
	for k, e := range entries {
		out[k] = json.RawMessage(e)
	}
	return out
}

func lastSeq(t *testing.T, b backend) uint64 {
	n, err := b.feed.LastSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func testImportExportConformance(t *testing.T, b backend) {
	ctx := ctxT(t)
	svc := newService(t, b)
	dir := conformance.Dir(t)
	for _, version := range []string{"pi-v3", "pi-v3-1.1", "pi-v2", "pi-v1"} {
		v3 := version == "pi-v3" || version == "pi-v3-1.1"
		for _, c := range conformance.Cases(t, dir, version) {
			file := "session.jsonl"
			if !v3 {
				file = "original.jsonl"
			}
			data, err := os.ReadFile(filepath.Join(c, file))
			if os.IsNotExist(err) {
				continue // pi wrote no file
			}
			exp := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(c, "expected.json")))
			res, err := svc.Import(ctx, wire.ImportRequest{File: data})
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			waitApplied(t, svc.Store.For(""), res.LastSeq)
			name := version + "/" + filepath.Base(c)
			err = svc.Store.For("").View(ctx, res.SessionID, func(d *store.Doc) error {
				t.Run(name, func(t *testing.T) {
					conformance.CheckSession(t, d.Tree, exp)
					idsKept := version != "pi-v1"
					if idsKept {
						conformance.CheckLeaf(t, d.Tree.LeafID(), exp)
					}
					ctxs, _ := conformance.Field(exp, "contexts")
					for _, want := range ctxs.Arr {
						conformance.CheckContext(t, d.Tree, want, idsKept)
					}
				})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !v3 {
				continue
			}
			// export(import(x)) == x, except a repeated identical header
			// line (and the lines pi skips in pi 1.1's damaged file).
			got, _, err := svc.Export(ctx, res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			f, err := tree.Read(data, tree.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if want := conformance.ExportOf(data, f); !bytes.Equal(got, want) {
				t.Errorf("%s: export differs from the imported file", name)
			}
		}
	}
}

// oneQuestion creates a session of one user message, aaaa0001, and waits
// until the Store has applied it.
func oneQuestion(ctx context.Context, t *testing.T, svc *service.Service) wire.WriteResult {
	t.Helper()
	created, err := svc.Create(ctx, wire.CreateRequest{Entries: raws(`{"type":"message","id":"aaaa0001","message":{"role":"user","content":"q"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, svc.Store.For(""), created.LastSeq)
	return created
}

func testServiceErrors(t *testing.T, b backend) {
	ctx := ctxT(t)
	svc := newService(t, b)
	created := oneQuestion(ctx, t, svc)
	sid := created.SessionID
	before := lastSeq(t, b)
	v1 := []byte(`{"type":"session","version":4,"id":"` + testutil.SessionID(t) + `"}` + "\n")
	cases := []struct {
		name  string
		do    func() error
		want  error
		field string
	}{
		{"malformed entry", func() error {
			_, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(`{"type":"message",`)})
			return err
		}, wire.ErrInvalid, "entries[0]"},
		{"missing type", func() error {
			_, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(`{"message":{}}`)})
			return err
		}, wire.ErrInvalid, "entries[0].type"},
		{"unknown parent", func() error {
			_, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(`{"type":"message","parentId":"nope","message":{"role":"user","content":"hi"}}`)})
			return err
		}, wire.ErrInvalid, "entries[0].parentId"},
		{"duplicate id, other content", func() error {
			_, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(`{"type":"message","id":"aaaa0001","message":{"role":"user","content":"other"}}`)})
			return err
		}, wire.ErrConflict, ""},
		{"duplicate id in request", func() error {
			_, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(`{"type":"custom","customType":"t","id":"x1"}`, `{"type":"custom","customType":"t","id":"x1"}`)})
			return err
		}, wire.ErrInvalid, "entries[1].id"},
		{"bad entry id", func() error {
			_, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(`{"type":"custom","customType":"t","id":"a b"}`)})
			return err
		}, wire.ErrInvalid, "entries[0].id"},
		{"oversize entry", func() error {
			big := `{"type":"custom","customType":"t","customType":"x","data":"` + strings.Repeat("x", 9<<20) + `"}`
			_, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(big)})
			return err
		}, wire.ErrTooLarge, ""},
		{"stale expectLastSeq", func() error {
			stale := created.LastSeq - 1
			_, err := svc.Append(ctx, sid, wire.AppendRequest{ExpectLastSeq: &stale, Entries: raws(`{"type":"custom","customType":"t"}`)})
			return err
		}, wire.ErrConflict, ""},
		{"unknown session", func() error {
			_, err := svc.Append(ctx, testutil.SessionID(t), wire.AppendRequest{Entries: raws(`{"type":"custom","customType":"t"}`)})
			return err
		}, wire.ErrNotFound, ""},
		{"bad session id", func() error {
			_, err := svc.Append(ctx, "pi.sess.>", wire.AppendRequest{Entries: raws(`{"type":"custom","customType":"t"}`)})
			return err
		}, wire.ErrInvalid, "sessionId"},
		{"bad client id", func() error {
			_, err := svc.Append(ctx, sid, wire.AppendRequest{Client: "a.b", Entries: raws(`{"type":"custom","customType":"t"}`)})
			return err
		}, wire.ErrInvalid, "client"},
		{"label of an unknown entry", func() error {
			_, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(`{"type":"label","targetId":"nope0000","label":"x"}`)})
			return err
		}, wire.ErrInvalid, "entries[0].targetId"},
		{"label without target", func() error {
			_, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(`{"type":"label","label":"x"}`)})
			return err
		}, wire.ErrInvalid, "entries[0].targetId"},
		{"cursors of an unknown session", func() error {
			_, _, err := svc.ListCursors(ctx, testutil.SessionID(t))
			return err
		}, wire.ErrNotFound, ""},
		{"import without header", func() error {
			_, err := svc.Import(ctx, wire.ImportRequest{File: []byte(`{"type":"message","id":"a"}`)})
			return err
		}, wire.ErrInvalid, "line 1"},
		{"import wrong version", func() error {
			_, err := svc.Import(ctx, wire.ImportRequest{File: v1})
			return err
		}, wire.ErrInvalid, "line 1"},
		{"import malformed only", func() error {
			_, err := svc.Import(ctx, wire.ImportRequest{File: []byte("{oops\n")})
			return err
		}, wire.ErrInvalid, "line 1"},
		{"import existing", func() error {
			data, _, _ := svc.Export(ctx, sid)
			_, err := svc.Import(ctx, wire.ImportRequest{File: data})
			return err
		}, wire.ErrExists, ""},
		{"create existing", func() error {
			_, err := svc.Create(ctx, wire.CreateRequest{Header: json.RawMessage(`{"id":"` + sid + `"}`)})
			return err
		}, wire.ErrExists, ""},
		{"create bad header version", func() error {
			_, err := svc.Create(ctx, wire.CreateRequest{Header: json.RawMessage(`{"version":2}`)})
			return err
		}, wire.ErrInvalid, "header.version"},
		{"create dangling parent", func() error {
			_, err := svc.Create(ctx, wire.CreateRequest{Entries: raws(`{"type":"custom","customType":"t","parentId":"zz"}`)})
			return err
		}, wire.ErrInvalid, "entries[0].parentId"},
	}
	for _, c := range cases {
		err := c.do()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: want %v, got %v", c.name, c.want, err)
			continue
		}
		var fe *wire.FieldError
		if c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field) {
			t.Errorf("%s: want field %q, got %v", c.name, c.field, err)
		}
		if n := lastSeq(t, b); n != before {
			t.Errorf("%s: the log changed (last seq %d -> %d)", c.name, before, n)
		}
	}
}

func testServiceAppend(t *testing.T, b backend) {
	ctx := ctxT(t)
	svc := newService(t, b)
	created, err := svc.Create(ctx, wire.CreateRequest{
		Header: json.RawMessage(`{"cwd":"/work","extra":"kept"}`),
		Entries: raws(`{"type":"message","message":{"role":"user","content":"q"}}`,
			`{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	sid := created.SessionID
	q, a := created.Entries[0].ID, created.Entries[1].ID
	// Default parent: the default leaf; explicit null: a new root; client cursor.
	r1, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(`{"type":"thinking_level_change","thinkingLevel":"high"}`)})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := svc.Append(ctx, sid, wire.AppendRequest{Client: "worker-7", Entries: raws(`{"type":"message","parentId":null,"message":{"role":"user","content":"new root"}}`,
		`{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m2"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	r3, err := svc.Append(ctx, sid, wire.AppendRequest{Client: "worker-7", Entries: raws(`{"type":"label","targetId":"` + q + `","label":"start"}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, svc.Store.For(""), r3.LastSeq)
	err = svc.Store.For("").View(ctx, sid, func(d *store.Doc) error {
		s := d.Tree
		if got := fmt.Sprint(s.Path(r1.Entries[0].ID)); got != fmt.Sprint([]string{q, a, r1.Entries[0].ID}) {
			return fmt.Errorf("default parent: path %s", got)
		}
		if got := s.Path(r3.Entries[0].ID); len(got) != 3 || got[1] != r2.Entries[1].ID {
			return fmt.Errorf("cursor parent: path %v", got)
		}
		if l, _ := s.Label(q); l != "start" {
			return fmt.Errorf("label %q", l)
		}
		if !strings.Contains(string(s.Header.Raw), `"extra":"kept"`) || s.Header.Cwd != "/work" {
			return fmt.Errorf("header %s", s.Header.Raw)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cur, err := svc.GetCursor(ctx, sid, "worker-7")
	if err != nil || cur.LeafID == nil || *cur.LeafID != r3.Entries[0].ID {
		t.Fatalf("cursor %+v, %v", cur, err)
	}

	// Idempotent retry: the same request again returns the original result,
	// with or without a timestamp, and stores nothing.
	req := wire.AppendRequest{Entries: raws(`{"type":"custom","customType":"t","customType":"x","id":"retry001","parentId":"` + a + `","timestamp":"2026-01-01T00:00:00.000Z"}`)}
	first, err := svc.Append(ctx, sid, req)
	if err != nil {
		t.Fatal(err)
	}
	n := lastSeq(t, b)
	for _, again := range []wire.AppendRequest{req, {Entries: raws(`{"type":"custom","customType":"t","customType":"x","id":"retry001","parentId":"` + a + `"}`)}} {
		res, err := svc.Append(ctx, sid, again)
		if err != nil || res.Entries[0].Seq != first.Entries[0].Seq {
			t.Fatalf("retry: %+v, %v (first %+v)", res, err, first)
		}
	}
	if lastSeq(t, b) != n {
		t.Fatal("a retry stored something")
	}

	// Many concurrent appenders without expectations: all land, none lost.
	var wg sync.WaitGroup
	const workers, each = 8, 10
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				_, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(fmt.Sprintf(`{"type":"custom","customType":"t","customType":"w%d-%d"}`, w, i))})
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	recs, err := b.log.Read(ctx, sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + 2 + 1 + 2 + 1 + 1 + workers*each; len(recs) != want {
		t.Fatalf("want %d records, got %d", want, len(recs))
	}
	// expectLastSeq that is current succeeds.
	last := recs[len(recs)-1].Seq
	if _, err := svc.Append(ctx, sid, wire.AppendRequest{ExpectLastSeq: &last, Entries: raws(`{"type":"custom","customType":"t","customType":"cas"}`)}); err != nil {
		t.Fatal(err)
	}
}

// genSession builds a realistic pi file of n entries with the writer's constructors.
func genSession(t testing.TB, r *rand.Rand, n int) []byte {
	id := fmt.Sprintf("%08x-0000-7000-8000-%012x", r.Uint32(), r.Uint64()&0xffffffffffff)
	s := tree.NewSession(tree.NewHeader(id, "2026-01-01T00:00:00.000Z", "/w", ""))
	var seed [32]byte
	for k := range 4 {
		v := r.Uint64()
		for j := range 8 {
			seed[k*8+j] = byte(v >> (8 * j))
		}
	}
	ids := tree.IDGen{R: rand.NewChaCha8(seed)}
	parent := ""
	for i := range n {
		m := tree.Meta{ID: ids.New(s.Has), ParentID: parent, Timestamp: fmt.Sprintf("2026-01-01T00:%02d:%02d.000Z", i/60%60, i%60)}
		var e tree.Entry
		var err error
		if i%2 == 0 {
			e, err = tree.NewMessage(m, user(fmt.Sprintf("question %d %s", i, strings.Repeat("x", r.IntN(200)))))
		} else {
			e, err = tree.NewMessage(m, assistant(fmt.Sprintf("answer %d", i)))
		}
		if err != nil {
			t.Fatal(err)
		}
		s.Append(e)
		parent = m.ID
		if r.IntN(10) == 0 && i > 2 { // branch back now and then
			parent = s.Entry(i - 2).ID
		}
	}
	return s.AppendJSONL(nil)
}

// testAppendOrphans: with Orphans an append keeps a parent or label target
// the session lacks as pi wrote it (pi 0.73.1's forks leave children of
// dropped labels): stored byte for byte, a root of the tree, resolved when
// an entry of that id arrives; a retry is recognized. Without it the same
// append is refused and the log does not change.
func testAppendOrphans(t *testing.T, b backend) {
	ctx := ctxT(t)
	svc := newService(t, b)
	created := oneQuestion(ctx, t, svc)
	sid := created.SessionID
	orphan := `{"type":"message","id":"bbbb0001","parentId":"gone0001","timestamp":"2026-11-30T09:00:00.000Z","message":{"role":"user","content":"after a dropped label","timestamp":1796029200000}}`
	child := `{"type":"label","id":"cccc0001","parentId":"bbbb0001","timestamp":"2026-11-30T09:00:01.000Z","targetId":"gone0002","label":"x"}`
	before := lastSeq(t, b)
	if _, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(orphan, child)}); !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("without orphans: %v, want invalid", err)
	}
	if n := lastSeq(t, b); n != before {
		t.Fatalf("a refused append changed the log (%d -> %d)", before, n)
	}
	res, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(orphan, child), Orphans: true})
	if err != nil {
		t.Fatal(err)
	}
	again, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(orphan, child), Orphans: true})
	if err != nil || fmt.Sprint(again.Entries) != fmt.Sprint(res.Entries) {
		t.Fatalf("retry: %v %v, want the first result %v", again.Entries, err, res.Entries)
	}
	waitApplied(t, svc.Store.For(""), res.LastSeq)
	err = svc.Store.For("").View(ctx, sid, func(d *store.Doc) error {
		if got := fmt.Sprint(d.Tree.Path("cccc0001")); got != "[bbbb0001 cccc0001]" {
			return fmt.Errorf("the orphan is not a root: path of its child %s", got)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	// Not a context edit: pi checks its target on the branch from its
	// parent, which an orphan edit does not have.
	edit := `{"type":"context_edit","id":"dddd0001","parentId":"gone0003","timestamp":"2026-11-30T09:00:01.500Z","targetId":"aaaa0001","replacement":null}`
	var fe *wire.FieldError
	if _, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(edit), Orphans: true}); !errors.As(err, &fe) || fe.Field != "entries[0].parentId" {
		t.Errorf("an orphan context edit: %v, want invalid at entries[0].parentId", err)
	}
	// The parent arrives later (as pi resolves it when reading the file).
	late := `{"type":"custom","customType":"t","id":"gone0001","parentId":"aaaa0001","timestamp":"2026-11-30T09:00:02.000Z"}`
	last, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(late), Orphans: true})
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, svc.Store.For(""), last.LastSeq)
	exp, _, err := svc.Export(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if want := orphan + "\n" + child + "\n" + late + "\n"; !strings.HasSuffix(string(exp), want) {
		t.Errorf("export does not end with the lines as sent:\n%s", exp)
	}
	err = svc.Store.For("").View(ctx, sid, func(d *store.Doc) error {
		if got := fmt.Sprint(d.Tree.Path("cccc0001")); got != "[aaaa0001 gone0001 bbbb0001 cccc0001]" {
			return fmt.Errorf("path of the orphan's child: %s", got)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
