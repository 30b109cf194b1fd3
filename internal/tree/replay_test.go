package tree_test

import (
	"fmt"
	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/tree"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// replayOps rebuilds pi's in-memory state for a case where pi wrote no file,
// by running the SessionManager calls of ops.json through our constructors.
// pi stamps entries with new Date(), which ops.json does not record. Where
// expected.json shows an entry's time (summaries and custom messages carry
// it), that is used; otherwise the calls' own message timestamps, from the
// same clock, give the latest time seen.
func replayOps(t *testing.T, dir string) (*tree.Session, string) {
	t.Helper()
	ops := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(dir, "ops.json")))
	exp := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(dir, "expected.json")))
	sid, _ := conformance.Field(exp, "sessionId")
	seen := entryTimes(ops, exp)
	// pi 1.1's calls where they differ from 0.73.1's.
	v11 := filepath.Base(filepath.Dir(dir)) == "pi-v3-1.1"
	checkpoints := compactionCheckpoints(ops, exp)
	var s *tree.Session
	leaf := ""
	var clock float64
	for k, op := range ops.Arr {
		name, _ := conformance.Field(op, "op")
		if m, ok := conformance.Field(op, "message"); ok {
			if ts, ok := conformance.Field(m, "timestamp"); ok && ts.Kind == tree.KindNumber && ts.Num > clock {
				clock = ts.Num
			}
		}
		meta := func() tree.Meta {
			id, ok := conformance.Field(op, "result")
			if !ok {
				t.Fatalf("op %d (%s) has no result", k, name.Str)
			}
			if ms, ok := seen[id.Str]; ok && ms > clock {
				clock = ms
			}
			ts := tree.FormatTimestamp(time.UnixMilli(int64(clock)))
			return tree.Meta{ID: id.Str, ParentID: leaf, Timestamp: ts}
		}
		str := func(key string) string {
			v, ok := conformance.Field(op, key)
			if !ok || v.Kind != tree.KindString {
				t.Fatalf("op %d (%s): %q is not a string", k, name.Str, key)
			}
			return v.Str
		}
		raw := func(key string) []byte {
			if v, ok := conformance.Field(op, key); ok {
				return v.AppendJSON(nil)
			}
			return nil
		}
		optBool := func(key string) *bool {
			if v, ok := conformance.Field(op, key); ok {
				return &v.Bool
			}
			return nil
		}
		var e tree.Entry
		var err error
		switch name.Str {
		case "create":
			s = tree.NewSession(tree.NewHeader(sid.Str, tree.FormatTimestamp(time.UnixMilli(int64(clock))), str("cwd"), ""))
			leaf = ""
			continue
		case "openExistingFile":
			if c, _ := conformance.Field(op, "fileContent"); c.Str != "" {
				t.Fatalf("op %d: replaying openExistingFile with content is not supported", k)
			}
			cwd, _ := conformance.Field(op, "cwdOverride")
			s = tree.NewSession(tree.NewHeader(sid.Str, "", cwd.Str, ""))
			leaf = ""
			continue
		case "branch":
			leaf = str("id")
			if !s.Has(leaf) {
				t.Fatalf("op %d: branch to unknown %q", k, leaf)
			}
			continue
		case "resetLeaf":
			leaf = ""
			continue
		case "appendMessage":
			e, err = tree.NewMessage(meta(), raw("message"))
		case "appendModelChange":
			e, err = tree.NewModelChange(meta(), str("provider"), str("modelId"))
		case "appendThinkingLevelChange":
			e, err = tree.NewThinkingLevelChange(meta(), str("thinkingLevel"))
		case "appendCompaction":
			tb, _ := conformance.Field(op, "tokensBefore")
			if !v11 {
				e, err = tree.NewCompaction(meta(), str("summary"), str("firstKeptEntryId"), tb.Num, raw("details"), optBool("fromHook"))
				break
			}
			// pi 1.1: null keeps nothing (the compaction's own id); the
			// checkpoint of the system prompt is pi-ai's merge of the
			// system messages, read from the context at the compaction.
			m := meta()
			o := entryObject("compaction", m, op, "summary", "firstKeptEntryId", "tokensBefore", "details", "usage", "fromHook")
			if fk, _ := o.Get("firstKeptEntryId"); fk == nil || fk.Kind == tree.KindNull {
				o.Set("firstKeptEntryId", tree.Value{Kind: tree.KindString, Str: m.ID})
			}
			if sm, ok := checkpoints[m.ID]; ok {
				o.Set("systemMessage", sm)
			}
			e, err = tree.ParseEntry(o.AppendJSON(nil))
		case "appendUsage":
			o := entryObject("usage", meta(), op, "kind", "provider", "model", "usage", "note")
			if n, _ := o.Get("note"); n != nil && n.Kind == tree.KindString && n.Str == "" {
				o.Delete("note") // pi leaves an empty note out
			}
			e, err = tree.ParseEntry(o.AppendJSON(nil))
		case "appendContextEdit":
			m := meta()
			o := entryObject("context_edit", m, op, "targetId", "replacement")
			// pi stores a string replacement of an assistant or toolResult
			// message as one text block.
			target, _ := s.Get(str("targetId"))
			if r, _ := o.Get("replacement"); target != nil && r != nil && r.Kind == tree.KindObject && (target.Role == tree.RoleAssistant || target.Role == tree.RoleToolResult) {
				if c, _ := r.Get("content"); c != nil && c.Kind == tree.KindString {
					block := tree.Value{Kind: tree.KindObject}
					block.Set("type", tree.Value{Kind: tree.KindString, Str: "text"})
					block.Set("text", *c)
					r.Set("content", tree.Value{Kind: tree.KindArray, Arr: []tree.Value{block}})
				}
			}
			e, err = tree.ParseEntry(o.AppendJSON(nil))
		case "appendCustomEntry":
			e, err = tree.NewCustomEntry(meta(), str("customType"), raw("data"))
		case "appendCustomMessageEntry":
			d, _ := conformance.Field(op, "display")
			e, err = tree.NewCustomMessage(meta(), str("customType"), raw("content"), d.Bool, raw("details"))
		case "appendSessionInfo":
			name := str("name")
			if v11 {
				name = crlfRuns.ReplaceAllString(name, " ") // pi 1.1 folds them
			}
			e, err = tree.NewSessionInfo(meta(), name)
		case "appendLabelChange":
			var label *string
			if v, ok := conformance.Field(op, "label"); ok {
				label = &v.Str
			}
			e, err = tree.NewLabel(meta(), str("targetId"), label)
		case "branchWithSummary":
			from := "root"
			if v11 && leaf != "" {
				from = leaf // pi 1.1: the leaf left behind
			}
			leaf = ""
			if v, _ := conformance.Field(op, "id"); v.Kind == tree.KindString {
				if !v11 {
					from = v.Str
				}
				leaf = v.Str
			}
			e, err = tree.NewBranchSummary(meta(), from, str("summary"), raw("details"), optBool("fromHook"))
		default:
			t.Fatalf("op %d: replaying %q is not supported", k, name.Str)
		}
		if err != nil {
			t.Fatalf("op %d (%s): %v", k, name.Str, err)
		}
		s.Append(e)
		leaf = e.ID
	}
	if s == nil {
		t.Fatal("ops.json creates no session")
	}
	return s, leaf
}

var crlfRuns = regexp.MustCompile(`[\r\n]+`)

// entryObject builds an entry as pi 1.1 writes one: type, id, parentId,
// timestamp, then the call's arguments named by keys, those it has.
func entryObject(typ string, m tree.Meta, op tree.Value, keys ...string) tree.Value {
	o := tree.Value{Kind: tree.KindObject}
	o.Set("type", tree.Value{Kind: tree.KindString, Str: typ})
	o.Set("id", tree.Value{Kind: tree.KindString, Str: m.ID})
	if m.ParentID == "" {
		o.Set("parentId", tree.Value{Kind: tree.KindNull})
	} else {
		o.Set("parentId", tree.Value{Kind: tree.KindString, Str: m.ParentID})
	}
	o.Set("timestamp", tree.Value{Kind: tree.KindString, Str: m.Timestamp})
	for _, k := range keys {
		if v, ok := conformance.Field(op, k); ok {
			o.Set(k, v)
		}
	}
	return o
}

// compactionCheckpoints reads, from the contexts of expected.json, the
// systemMessage of each compaction that has one: the first message of the
// context at the compaction, when it is a system message.
func compactionCheckpoints(ops, exp tree.Value) map[string]tree.Value {
	comps := map[string]bool{}
	for _, op := range ops.Arr {
		name, _ := conformance.Field(op, "op")
		if id, ok := conformance.Field(op, "result"); ok && name.Str == "appendCompaction" {
			comps[id.Str] = true
		}
	}
	out := map[string]tree.Value{}
	ctxs, _ := conformance.Field(exp, "contexts")
	for _, c := range ctxs.Arr {
		leaf, _ := conformance.Field(c, "leafId")
		msgs, _ := conformance.Field(c, "messages")
		if !comps[leaf.Str] || len(msgs.Arr) < 2 {
			continue
		}
		if r, _ := conformance.Field(msgs.Arr[0], "role"); r.Str == "system" {
			out[leaf.Str] = msgs.Arr[0]
		}
	}
	return out
}

// entryTimes reads, from the contexts of expected.json, the times of the
// entries that produce a message carrying their own timestamp.
func entryTimes(ops, exp tree.Value) map[string]float64 {
	kinds := map[string]string{}
	for _, op := range ops.Arr {
		name, _ := conformance.Field(op, "op")
		if id, ok := conformance.Field(op, "result"); ok {
			kinds[id.Str] = name.Str
		}
	}
	out := map[string]float64{}
	ctxs, _ := conformance.Field(exp, "contexts")
	for _, c := range ctxs.Arr {
		leaf, _ := conformance.Field(c, "leafId")
		msgs, _ := conformance.Field(c, "messages")
		if leaf.Kind != tree.KindString || len(msgs.Arr) == 0 {
			continue
		}
		var m tree.Value
		switch kinds[leaf.Str] {
		case "appendCustomMessageEntry", "branchWithSummary":
			m = msgs.Arr[len(msgs.Arr)-1]
		case "appendCompaction":
			m = msgs.Arr[0]
		default:
			continue
		}
		if ts, ok := conformance.Field(m, "timestamp"); ok && ts.Kind == tree.KindNumber {
			out[leaf.Str] = ts.Num
		}
	}
	return out
}

// TestConstructorsMatchPi rebuilds every entry of every pi-written v3 file
// from its decoded arguments and requires the very same bytes.
func TestConstructorsMatchPi(t *testing.T) {
	dir := conformance.Dir(t)
	n := 0
	for _, c := range conformance.Cases(t, dir, "pi-v3") {
		data, err := os.ReadFile(filepath.Join(c, "session.jsonl"))
		if os.IsNotExist(err) {
			continue
		}
		f, err := tree.Read(data, tree.ReadOptions{Strict: true})
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		for i := range f.Len() {
			e := f.Entry(i)
			got, err := rebuild(t, e)
			if err != nil {
				t.Errorf("%s line %d: %v", filepath.Base(c), f.EntryLines[i], err)
				continue
			}
			if string(got.Raw) != string(e.Raw) {
				t.Errorf("%s line %d:\n got %.300s\nwant %.300s", filepath.Base(c), f.EntryLines[i], got.Raw, e.Raw)
			}
			n++
		}
	}
	if n < 500 {
		t.Fatalf("only %d entries checked", n)
	}
}

func rebuild(t *testing.T, e *tree.Entry) (tree.Entry, error) {
	v := conformance.MustValue(t, e.Raw)
	str := func(k string) string { f, _ := conformance.Field(v, k); return f.Str }
	raw := func(k string) []byte {
		if f, ok := conformance.Field(v, k); ok {
			return f.AppendJSON(nil)
		}
		return nil
	}
	optBool := func(k string) *bool {
		if f, ok := conformance.Field(v, k); ok {
			return &f.Bool
		}
		return nil
	}
	m := tree.Meta{ID: e.ID, ParentID: e.ParentID, Timestamp: str("timestamp")}
	switch e.Kind {
	case tree.KindMessage:
		return tree.NewMessage(m, raw("message"))
	case tree.KindModelChange:
		return tree.NewModelChange(m, str("provider"), str("modelId"))
	case tree.KindThinkingLevelChange:
		return tree.NewThinkingLevelChange(m, str("thinkingLevel"))
	case tree.KindCompaction:
		tb, _ := conformance.Field(v, "tokensBefore")
		return tree.NewCompaction(m, str("summary"), str("firstKeptEntryId"), tb.Num, raw("details"), optBool("fromHook"))
	case tree.KindCustom:
		return tree.NewCustomEntry(m, str("customType"), raw("data"))
	case tree.KindCustomMessage:
		d, _ := conformance.Field(v, "display")
		return tree.NewCustomMessage(m, str("customType"), raw("content"), d.Bool, raw("details"))
	case tree.KindSessionInfo:
		return tree.NewSessionInfo(m, str("name"))
	case tree.KindLabel:
		var label *string
		if f, ok := conformance.Field(v, "label"); ok {
			label = &f.Str
		}
		return tree.NewLabel(m, str("targetId"), label)
	case tree.KindBranchSummary:
		return tree.NewBranchSummary(m, str("fromId"), str("summary"), raw("details"), optBool("fromHook"))
	}
	return tree.Entry{}, fmt.Errorf("unexpected kind %v", e.Kind)
}
