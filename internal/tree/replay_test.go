package tree

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// replayOps rebuilds pi's in-memory state for a case where pi wrote no file,
// by running the SessionManager calls of ops.json through our constructors.
// pi stamps entries with new Date(), which ops.json does not record. Where
// expected.json shows an entry's time (summaries and custom messages carry
// it), that is used; otherwise the calls' own message timestamps, from the
// same clock, give the latest time seen.
func replayOps(t *testing.T, dir string) (*Session, string) {
	t.Helper()
	ops := mustValue(t, mustRead(t, filepath.Join(dir, "ops.json")))
	exp := mustValue(t, mustRead(t, filepath.Join(dir, "expected.json")))
	sid, _ := field(exp, "sessionId")
	seen := entryTimes(ops, exp)
	var s *Session
	leaf := ""
	var clock float64
	for k, op := range ops.Arr {
		name, _ := field(op, "op")
		if m, ok := field(op, "message"); ok {
			if ts, ok := field(m, "timestamp"); ok && ts.Kind == KindNumber && ts.Num > clock {
				clock = ts.Num
			}
		}
		meta := func() Meta {
			id, ok := field(op, "result")
			if !ok {
				t.Fatalf("op %d (%s) has no result", k, name.Str)
			}
			if ms, ok := seen[id.Str]; ok && ms > clock {
				clock = ms
			}
			ts := FormatTimestamp(time.UnixMilli(int64(clock)))
			return Meta{ID: id.Str, ParentID: leaf, Timestamp: ts}
		}
		str := func(key string) string {
			v, ok := field(op, key)
			if !ok || v.Kind != KindString {
				t.Fatalf("op %d (%s): %q is not a string", k, name.Str, key)
			}
			return v.Str
		}
		raw := func(key string) []byte {
			if v, ok := field(op, key); ok {
				return v.AppendJSON(nil)
			}
			return nil
		}
		optBool := func(key string) *bool {
			if v, ok := field(op, key); ok {
				return &v.Bool
			}
			return nil
		}
		var e Entry
		var err error
		switch name.Str {
		case "create":
			s = NewSession(NewHeader(sid.Str, FormatTimestamp(time.UnixMilli(int64(clock))), str("cwd"), ""))
			leaf = ""
			continue
		case "openExistingFile":
			if c, _ := field(op, "fileContent"); c.Str != "" {
				t.Fatalf("op %d: replaying openExistingFile with content is not supported", k)
			}
			cwd, _ := field(op, "cwdOverride")
			s = NewSession(NewHeader(sid.Str, "", cwd.Str, ""))
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
			e, err = NewMessage(meta(), raw("message"))
		case "appendModelChange":
			e, err = NewModelChange(meta(), str("provider"), str("modelId"))
		case "appendThinkingLevelChange":
			e, err = NewThinkingLevelChange(meta(), str("thinkingLevel"))
		case "appendCompaction":
			tb, _ := field(op, "tokensBefore")
			e, err = NewCompaction(meta(), str("summary"), str("firstKeptEntryId"), tb.Num, raw("details"), optBool("fromHook"))
		case "appendCustomEntry":
			e, err = NewCustomEntry(meta(), str("customType"), raw("data"))
		case "appendCustomMessageEntry":
			d, _ := field(op, "display")
			e, err = NewCustomMessage(meta(), str("customType"), raw("content"), d.Bool, raw("details"))
		case "appendSessionInfo":
			e, err = NewSessionInfo(meta(), str("name"))
		case "appendLabelChange":
			var label *string
			if v, ok := field(op, "label"); ok {
				label = &v.Str
			}
			e, err = NewLabel(meta(), str("targetId"), label)
		case "branchWithSummary":
			from := "root"
			leaf = ""
			if v, _ := field(op, "id"); v.Kind == KindString {
				from, leaf = v.Str, v.Str
			}
			e, err = NewBranchSummary(meta(), from, str("summary"), raw("details"), optBool("fromHook"))
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

// entryTimes reads, from the contexts of expected.json, the times of the
// entries that produce a message carrying their own timestamp.
func entryTimes(ops, exp Value) map[string]float64 {
	kinds := map[string]string{}
	for _, op := range ops.Arr {
		name, _ := field(op, "op")
		if id, ok := field(op, "result"); ok {
			kinds[id.Str] = name.Str
		}
	}
	out := map[string]float64{}
	ctxs, _ := field(exp, "contexts")
	for _, c := range ctxs.Arr {
		leaf, _ := field(c, "leafId")
		msgs, _ := field(c, "messages")
		if leaf.Kind != KindString || len(msgs.Arr) == 0 {
			continue
		}
		var m Value
		switch kinds[leaf.Str] {
		case "appendCustomMessageEntry", "branchWithSummary":
			m = msgs.Arr[len(msgs.Arr)-1]
		case "appendCompaction":
			m = msgs.Arr[0]
		default:
			continue
		}
		if ts, ok := field(m, "timestamp"); ok && ts.Kind == KindNumber {
			out[leaf.Str] = ts.Num
		}
	}
	return out
}

// TestConstructorsMatchPi rebuilds every entry of every pi-written v3 file
// from its decoded arguments and requires the very same bytes.
func TestConstructorsMatchPi(t *testing.T) {
	dir := conformanceDir(t)
	n := 0
	for _, c := range caseDirs(t, dir, "pi-v3") {
		data, err := os.ReadFile(filepath.Join(c, "session.jsonl"))
		if os.IsNotExist(err) {
			continue
		}
		f, err := Read(data, ReadOptions{Strict: true})
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

func rebuild(t *testing.T, e *Entry) (Entry, error) {
	v := mustValue(t, e.Raw)
	str := func(k string) string { f, _ := field(v, k); return f.Str }
	raw := func(k string) []byte {
		if f, ok := field(v, k); ok {
			return f.AppendJSON(nil)
		}
		return nil
	}
	optBool := func(k string) *bool {
		if f, ok := field(v, k); ok {
			return &f.Bool
		}
		return nil
	}
	m := Meta{ID: e.ID, ParentID: e.ParentID, Timestamp: str("timestamp")}
	switch e.Kind {
	case KindMessage:
		return NewMessage(m, raw("message"))
	case KindModelChange:
		return NewModelChange(m, str("provider"), str("modelId"))
	case KindThinkingLevelChange:
		return NewThinkingLevelChange(m, str("thinkingLevel"))
	case KindCompaction:
		tb, _ := field(v, "tokensBefore")
		return NewCompaction(m, str("summary"), str("firstKeptEntryId"), tb.Num, raw("details"), optBool("fromHook"))
	case KindCustom:
		return NewCustomEntry(m, str("customType"), raw("data"))
	case KindCustomMessage:
		d, _ := field(v, "display")
		return NewCustomMessage(m, str("customType"), raw("content"), d.Bool, raw("details"))
	case KindSessionInfo:
		return NewSessionInfo(m, str("name"))
	case KindLabel:
		var label *string
		if f, ok := field(v, "label"); ok {
			label = &f.Str
		}
		return NewLabel(m, str("targetId"), label)
	case KindBranchSummary:
		return NewBranchSummary(m, str("fromId"), str("summary"), raw("details"), optBool("fromHook"))
	}
	return Entry{}, fmt.Errorf("unexpected kind %v", e.Kind)
}
