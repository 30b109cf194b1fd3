package client

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/nodetest"
	"github.com/pifleet/sessionlog/internal/tree"
)

// TestConformanceReplay replays pi's own SessionManager calls (ops.json of
// every pi-v3 case that creates one session and writes it) through a
// client Session on each transport, with pi's ids and timestamps fed in as
// the id source and the clock, and requires pi's file byte for byte: from
// Export, and on the log. Among them: the eight-step debugging story, and
// 38 entries of every type held back until the first assistant message.
func TestConformanceReplay(t *testing.T) {
	dir := conformance.Dir(t)
	// A node per transport: the cases keep pi's session ids.
	nodes := map[string]*nodetest.Node{}
	for _, kind := range transportKinds {
		nodes[kind] = nodetest.Start(t, nodetest.Options{})
	}
	replayed := 0
	for _, c := range conformance.Cases(t, dir, "pi-v3") {
		ops := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(c, "ops.json")))
		file, err := os.ReadFile(filepath.Join(c, "session.jsonl"))
		if err != nil || !replayable(ops) {
			continue // no file (pi-v3/p03), forks, reopened files
		}
		replayed++
		for _, kind := range transportKinds {
			n := nodes[kind]
			t.Run(filepath.Base(c)+"/"+kind, func(t *testing.T) {
				s := replay(t, n, kind, ops, file)
				if got := s.Export(); !bytes.Equal(got, file) {
					t.Fatalf("Export differs from pi's file:\n%s", firstDiff(got, file))
				}
				recs, err := n.Log.Read(context.Background(), s.ID(), 0)
				if err != nil {
					t.Fatal(err)
				}
				var stored []byte
				for _, r := range recs {
					stored = append(append(stored, r.Data...), '\n')
				}
				if !bytes.Equal(stored, file) {
					t.Fatalf("the log differs from pi's file:\n%s", firstDiff(stored, file))
				}
				exp := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(c, "expected.json")))
				want, _ := conformance.Field(exp, "tree")
				conformance.CheckJSON(t, "tree", treeJSON(s.Tree()), want)
			})
		}
	}
	if replayed < 8 {
		t.Fatalf("only %d cases replayed", replayed)
	}
}

func replayable(ops tree.Value) bool {
	for _, op := range ops.Arr {
		switch name, _ := conformance.Field(op, "op"); name.Str {
		case "openExistingFile", "reopen", "createBranchedSession":
			return false
		}
	}
	return true
}

// replay runs ops through a Session whose ids and clock are pi's.
func replay(t *testing.T, n *nodetest.Node, kind string, ops tree.Value, file []byte) *Session {
	t.Helper()
	ctx := context.Background()
	f, err := tree.Read(file, tree.ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids bytes.Buffer
	var now string
	clock := func() time.Time {
		ts, err := time.Parse(time.RFC3339Nano, now)
		if err != nil {
			t.Fatalf("timestamp %q: %v", now, err)
		}
		return ts
	}
	c := dial(t, n, kind, WithIDSource(&ids), WithClock(clock))
	now = f.Header.Timestamp
	s, err := c.Create(WithSessionID(f.Header.ID), WithCwd(f.Header.Cwd))
	if err != nil {
		t.Fatal(err)
	}
	for k, op := range ops.Arr[1:] {
		name, _ := conformance.Field(op, "op")
		if name.Str == "branch" {
			id, _ := conformance.Field(op, "id")
			if err := s.Branch(ctx, id.Str); err != nil {
				t.Fatalf("op %d: %v", k+1, err)
			}
			continue
		}
		if name.Str == "resetLeaf" {
			if err := s.ResetLeaf(ctx); err != nil {
				t.Fatalf("op %d: %v", k+1, err)
			}
			continue
		}
		result, _ := conformance.Field(op, "result")
		e, ok := f.Get(result.Str)
		if !ok {
			t.Fatalf("op %d: entry %s is not in the file", k+1, result.Str)
		}
		v := conformance.MustValue(t, e.Raw)
		now = e.TimestampString()
		b, _ := hex.DecodeString(result.Str)
		ids.Write(b)
		var w Written
		if name.Str == "branchWithSummary" {
			from := fieldStr(v, "fromId")
			if from == "root" {
				from = ""
			}
			w, err = s.BranchWithSummary(ctx, from, fieldStr(v, "summary"), rawField(v, "details"), boolField(v, "fromHook"))
		} else {
			w, err = s.Append(ctx, specFor(t, name.Str, op, v))
		}
		if err != nil || w.ID != result.Str {
			t.Fatalf("op %d (%s): %v, wrote %s, pi %s", k+1, name.Str, err, w.ID, result.Str)
		}
	}
	return s
}

// specFor builds the Spec of an append op from the entry pi wrote for it.
func specFor(t *testing.T, op string, opv, e tree.Value) Spec {
	switch op {
	case "appendMessage":
		return Message(rawField(e, "message"))
	case "appendModelChange":
		return ModelChange(fieldStr(e, "provider"), fieldStr(e, "modelId"))
	case "appendThinkingLevelChange":
		return ThinkingLevelChange(fieldStr(e, "thinkingLevel"))
	case "appendCompaction":
		tb, _ := conformance.Field(e, "tokensBefore")
		return Compaction(fieldStr(e, "summary"), fieldStr(e, "firstKeptEntryId"), tb.Num, rawField(e, "details"), boolField(e, "fromHook"))
	case "appendCustomEntry":
		return CustomEntry(fieldStr(e, "customType"), rawField(e, "data"))
	case "appendCustomMessageEntry":
		d, _ := conformance.Field(e, "display")
		return CustomMessage(fieldStr(e, "customType"), rawField(e, "content"), d.Bool, rawField(e, "details"))
	case "appendSessionInfo":
		return SessionInfo(fieldStr(opv, "name")) // pi stores it trimmed
	case "appendLabelChange":
		var label *string
		if l, ok := conformance.Field(e, "label"); ok {
			label = &l.Str
		}
		return LabelChange(fieldStr(e, "targetId"), label)
	}
	t.Fatalf("op %q is not replayed", op)
	return Spec{}
}

func fieldStr(v tree.Value, key string) string {
	f, _ := conformance.Field(v, key)
	return f.Str
}

// rawField returns a field as JSON (nil when absent: undefined).
func rawField(v tree.Value, key string) any {
	if f, ok := conformance.Field(v, key); ok {
		return json.RawMessage(f.AppendJSON(nil))
	}
	return nil
}

func boolField(v tree.Value, key string) *bool {
	if f, ok := conformance.Field(v, key); ok {
		return &f.Bool
	}
	return nil
}

// treeJSON writes nodes in the shape of expected.json's tree.
func treeJSON(nodes []*Node) []byte {
	var b strings.Builder
	var walk func([]*Node)
	walk = func(ns []*Node) {
		b.WriteByte('[')
		for i, n := range ns {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":%q,"children":`, n.ID)
			walk(n.Children)
			b.WriteByte('}')
		}
		b.WriteByte(']')
	}
	walk(nodes)
	return []byte(b.String())
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got %.400s\nwant %.400s", i+1, gl, wl)
		}
	}
	return "(equal)"
}
