package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

type importResult struct {
	SessionID     string `json:"sessionId"`
	EntryCount    int    `json:"entryCount"`
	LastSeq       uint64 `json:"lastSeq"`
	SourceVersion int    `json:"sourceVersion"`
}

// TestConformanceV3 imports every public v3 vector of pi 0.73.1 and pi
// 1.1 over HTTP, exports it back byte for byte, and checks the session,
// the tree and every context pi computed against the API's answers, as
// JSON values. The files pi 1.1 refuses to open are refused.
func TestConformanceV3(t *testing.T) {
	t.Run("shards=1", func(t *testing.T) { conformanceV3(t, newEnv(t)) })
	// Over a sharded log: the vectors' sessions spread over the shards,
	// every sequence the API hands out qualified.
	t.Run("shards=4", func(t *testing.T) { conformanceV3(t, newShardedEnv(t, 4)) })
}

func conformanceV3(t *testing.T, e *env) {
	dir := conformance.Dir(t)
	n := 0
	var cases []string
	for _, set := range []string{"pi-v3", "pi-v3-1.1"} {
		cases = append(cases, conformance.Cases(t, dir, set)...)
	}
	for _, c := range cases {
		if conformance.IsRefusedFiles(c) {
			n++
			t.Run(conformance.CaseName(c), func(t *testing.T) { importRefused(t, e, c) })
			continue
		}
		data, err := os.ReadFile(filepath.Join(c, "session.jsonl"))
		if os.IsNotExist(err) {
			continue // pi wrote no file (p03-no-assistant)
		}
		n++
		exp := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(c, "expected.json")))
		t.Run(conformance.CaseName(c), func(t *testing.T) {
			var res importResult
			e.ok(201, "POST", "/v1/import", data, &res)
			base := "/v1/sessions/" + res.SessionID
			q := fmt.Sprintf("?minSeq=%d", res.LastSeq)

			// export(import(x)) == x, but for pi's repeated identical
			// header (and, for the damaged file, the lines pi skips).
			f, err := tree.Read(data, tree.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := e.ok(200, "GET", base+"/export"+q, nil, nil)
			if want := conformance.ExportOf(data, f); !bytes.Equal(got, want) {
				t.Errorf("export differs from the imported file (%d bytes, want %d)", len(got), len(want))
			}

			detail := conformance.MustValue(t, e.ok(200, "GET", base, nil, nil))
			for _, k := range []string{"sessionId", "name", "entryCount", "labels", "leafId", "cwd"} {
				want, ok := conformance.Field(exp, k)
				if !ok && k == "cwd" {
					continue // pi 0.73.1's vectors do not list it
				}
				if d := conformance.Diff(k, fieldOf(detail, k), want); d != "" {
					t.Error(d)
				}
			}
			if _, ok := conformance.Field(detail, "usageBreakdown"); ok {
				t.Error("get without include=usage carries usageBreakdown")
			}
			// pi 1.1's getUsageCostBreakdown, asked for; pi 0.73.1's
			// vectors have none to compare.
			if want, ok := conformance.Field(exp, "usageBreakdown"); ok {
				withUsage := conformance.MustValue(t, e.ok(200, "GET", base+"?include=usage", nil, nil))
				if d := conformance.Diff("usageBreakdown", fieldOf(withUsage, "usageBreakdown"), want); d != "" {
					t.Error(d)
				}
			}
			tr := conformance.MustValue(t, e.ok(200, "GET", base+"/tree", nil, nil))
			wantTree, _ := conformance.Field(exp, "tree")
			if d := conformance.Diff("tree", idsAndChildren(fieldOf(tr, "tree")), wantTree); d != "" {
				t.Error(d)
			}

			// include=entries: pi's getTree() nodes, each entry as stored.
			lines := make([][]byte, f.Len())
			for i := range f.Len() {
				lines[i] = f.Entry(i).Raw
			}
			full := conformance.MustValue(t, e.ok(200, "GET", base+"/tree?include=entries", nil, nil))
			if d := conformance.Diff("tree?include=entries", entryIDsAndChildren(fieldOf(full, "tree")), wantTree); d != "" {
				t.Error(d)
			}
			checkTreeEntries(t, fieldOf(full, "tree"), lines, fieldOf(detail, "labels"))

			// form=flat: the same nodes, roots and leaf (a missing parent
			// or a cycle among the vectors: their parentId follows pi's rule).
			for _, q := range []string{"", "&include=entries"} {
				var f wire.TreeFlatReply
				e.ok(200, "GET", base+"/tree?form=flat"+q, nil, &f)
				nested := e.ok(200, "GET", base+"/tree?"+q, nil, nil)
				var a, b any
				if err := json.Unmarshal(nest(t, f), &a); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(nested, &b); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(a, b) {
					t.Errorf("tree%s nests to another tree than the nested form's", q)
				}
			}

			// POST /v1/context over the file's entries, as a client holds
			// them before anything is stored, equals pi's contexts too.
			body := []byte(`{"entries":[` + string(bytes.Join(lines, []byte(","))) + `]`)
			ctxs, _ := conformance.Field(exp, "contexts")
			for _, want := range ctxs.Arr {
				leaf, _ := conformance.Field(want, "leafId")
				l := "null"
				if leaf.Kind == tree.KindString {
					l = leaf.Str
				}
				checkContext(t, e, base+"/context?leaf="+url.QueryEscape(l), want)
				lj := "null"
				if l != "null" {
					lj = `"` + l + `"`
				}
				checkContextWith(t, "POST /v1/context leaf "+l, func(format string) []byte {
					return e.ok(200, "POST", "/v1/context", string(body)+`,"leaf":`+lj+`,"format":"`+format+`"}`, nil)
				}, want)
			}
		})
	}
	if n < 30 {
		t.Fatalf("only %d v3 vectors with a session file in %s", n, dir)
	}
}

// importRefused: an import refuses the files pi 1.1 refuses to open (a
// non-empty file without a valid header), naming the line — or the body,
// when no line holds anything — and stores nothing. A zero-byte file,
// which pi accepts by writing a new header into it, holds no session: the
// import refuses it too, naming the body (a new empty session is POST
// /v1/sessions).
func importRefused(t *testing.T, e *env, dir string) {
	for _, f := range conformance.RefusedFiles(t, dir) {
		code, b := e.do("POST", "/v1/import", f.Data)
		var er struct {
			Error struct{ Code, Field, Message string }
		}
		if err := json.Unmarshal(b, &er); err != nil || code != 400 || er.Error.Code != "invalid" {
			t.Errorf("%s: %d %s, want 400 invalid", filepath.Base(f.Path), code, b)
			continue
		}
		want := "line "
		if len(bytes.TrimSpace(f.Data)) == 0 {
			want = "body"
		}
		if !strings.HasPrefix(er.Error.Field, want) || er.Error.Message == "" {
			t.Errorf("%s: field %q (%s), want %q…", filepath.Base(f.Path), er.Error.Field, er.Error.Message, want)
		}
	}
}

// checkContext compares GET context (agent and llm formats) with one of
// expected.json's contexts, field by field.
func checkContext(t *testing.T, e *env, path string, want tree.Value) {
	t.Helper()
	checkContextWith(t, path, func(format string) []byte { return e.ok(200, "GET", path+"&format="+format, nil, nil) }, want)
}

// checkContextWith compares the contexts get returns (format agent and
// llm) with one of expected.json's.
func checkContextWith(t *testing.T, path string, get func(format string) []byte, want tree.Value) {
	t.Helper()
	agent := conformance.MustValue(t, get("agent"))
	llm := conformance.MustValue(t, get("llm"))
	for _, m := range want.Obj {
		got := agent
		key := m.Key
		switch key {
		case "llmMessages":
			got, key = llm, "messages"
		case "pathLength":
			p, _ := conformance.Field(agent, "path")
			if float64(len(p.Arr)) != m.Val.Num {
				t.Errorf("%s: pathLength %d, want %v", path, len(p.Arr), m.Val.Num)
			}
			continue
		}
		if d := conformance.Diff(path+" "+m.Key, fieldOf(got, key), m.Val); d != "" {
			t.Error(d)
		}
	}
}

// TestConformanceMigrations imports every v1 and v2 vector (pi JSONL of any
// version is accepted) and checks the migrated session's context at the
// default leaf. v1 ids are fresh, so only id-free fields are compared.
func TestConformanceMigrations(t *testing.T) {
	e := newEnv(t)
	dir := conformance.Dir(t)
	for _, version := range []string{"pi-v1", "pi-v2"} {
		for _, c := range conformance.Cases(t, dir, version) {
			t.Run(version+"/"+filepath.Base(c), func(t *testing.T) {
				data := conformance.MustRead(t, filepath.Join(c, "original.jsonl"))
				exp := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(c, "expected.json")))
				var res importResult
				e.ok(201, "POST", "/v1/import", data, &res)
				if want, _ := conformance.Field(exp, "entryCount"); float64(res.EntryCount) != want.Num {
					t.Errorf("entryCount %d, want %v", res.EntryCount, want.Num)
				}
				if want, _ := conformance.Field(exp, "sourceVersion"); float64(res.SourceVersion) != want.Num {
					t.Errorf("sourceVersion %d, want %v", res.SourceVersion, want.Num)
				}
				ctxs, _ := conformance.Field(exp, "contexts")
				want := ctxs.Arr[0]
				if ids, _ := conformance.Field(exp, "idsPreserved"); !ids.Bool {
					want.Delete("leafId")
					want.Delete("path")
				}
				path := fmt.Sprintf("/v1/sessions/%s/context?minSeq=%d", res.SessionID, res.LastSeq)
				checkContext(t, e, path, want)
			})
		}
	}
}

// entryIDsAndChildren reduces getTree() nodes ({entry,children,...}) to
// the vectors' {id,children}.
func entryIDsAndChildren(v tree.Value) tree.Value {
	out := tree.Value{Kind: tree.KindArray}
	for _, n := range v.Arr {
		node := tree.Value{Kind: tree.KindObject}
		node.Set("id", fieldOf(fieldOf(n, "entry"), "id"))
		node.Set("children", entryIDsAndChildren(fieldOf(n, "children")))
		out.Arr = append(out.Arr, node)
	}
	return out
}

// checkTreeEntries checks every getTree() node: its entry is the file's
// line of that id, its label the session's label of it, and a label has
// the timestamp of the label entry that set it.
func checkTreeEntries(t *testing.T, nodes tree.Value, lines [][]byte, labels tree.Value) {
	t.Helper()
	byID := map[string]tree.Value{}
	labelTS := map[string]tree.Value{}
	for _, l := range lines {
		v := conformance.MustValue(t, l)
		byID[fieldOf(v, "id").Str] = v
		if fieldOf(v, "type").Str == "label" {
			labelTS[fieldOf(v, "targetId").Str] = fieldOf(v, "timestamp")
		}
	}
	var walk func(v tree.Value)
	walk = func(v tree.Value) {
		for _, n := range v.Arr {
			entry := fieldOf(n, "entry")
			id := fieldOf(entry, "id").Str
			if d := conformance.Diff("entry "+id, entry, byID[id]); d != "" {
				t.Error(d)
			}
			if want := fieldOf(labels, id); want.Kind == tree.KindString {
				if d := conformance.Diff("label of "+id, fieldOf(n, "label"), want); d != "" {
					t.Error(d)
				}
				if d := conformance.Diff("labelTimestamp of "+id, fieldOf(n, "labelTimestamp"), labelTS[id]); d != "" {
					t.Error(d)
				}
			} else if _, ok := conformance.Field(n, "label"); ok {
				t.Errorf("entry %s: a label, but the session has none on it", id)
			}
			walk(fieldOf(n, "children"))
		}
	}
	walk(nodes)
}

// fieldOf returns v[key], or the undefined (zero) Value.
func fieldOf(v tree.Value, key string) tree.Value {
	f, _ := conformance.Field(v, key)
	return f
}

// idsAndChildren reduces the API's tree nodes ({id,type,label?,children})
// to the vectors' {id,children}.
func idsAndChildren(v tree.Value) tree.Value {
	out := tree.Value{Kind: tree.KindArray}
	for _, n := range v.Arr {
		node := tree.Value{Kind: tree.KindObject}
		node.Set("id", fieldOf(n, "id"))
		node.Set("children", idsAndChildren(fieldOf(n, "children")))
		out.Arr = append(out.Arr, node)
	}
	return out
}
