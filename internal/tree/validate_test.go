package tree_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// head is what every test entry starts with.
const head = `"id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"`

func TestCheckEntryRejects(t *testing.T) {
	for _, tc := range []struct {
		line, path string
	}{
		// The malformed entries the API must refuse (docs/API.md).
		{`{"type":"message"}`, "message"},
		{`{"type":"message","message":"not an object"}`, "message"},
		{`{"type":"message","message":{"role":42}}`, "message.role"},
		{`{"type":"model_change"}`, "provider"},
		{`{"type":"model_change","provider":"anthropic"}`, "modelId"},
		{`{"type":"compaction","summary":7,"firstKeptEntryId":"x","tokensBefore":1}`, "summary"},

		{`"just a string"`, ""},
		{`{"id":"x"}`, "type"},
		{`{"type":3}`, "type"},
		{`{"type":"message","id":5,"message":{"role":"user","content":"hi"}}`, "id"},
		{`{"type":"message","parentId":5,"message":{"role":"user","content":"hi"}}`, "parentId"},
		{`{"type":"message","timestamp":1,"message":{"role":"user","content":"hi"}}`, "timestamp"},
		{`{"type":"message","message":{}}`, "message.role"},
		{`{"type":"message","message":{"role":"user"}}`, "message.content"},
		{`{"type":"message","message":{"role":"user","content":{}}}`, "message.content"},
		{`{"type":"message","message":{"role":"user","content":"hi","timestamp":"2026"}}`, "message.timestamp"},
		{`{"type":"message","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"b"}]}}`, "message.content[1].type"},
		{`{"type":"message","message":{"role":"user","content":[{"type":"text","text":"a"},{"text":"b"}]}}`, "message.content[1].type"},
		{`{"type":"message","message":{"role":"user","content":["a"]}}`, "message.content[0]"},
		{`{"type":"message","message":{"role":"user","content":[{"type":"text"}]}}`, "message.content[0].text"},
		{`{"type":"message","message":{"role":"user","content":[{"type":"image","data":"AAAA"}]}}`, "message.content[0].mimeType"},
		{`{"type":"message","message":{"role":"assistant","content":"hi","provider":"p","model":"m"}}`, "message.content"},
		{`{"type":"message","message":{"role":"assistant","content":[{"type":"image","data":"A","mimeType":"image/png"}],"provider":"p","model":"m"}}`, "message.content[0].type"},
		{`{"type":"message","message":{"role":"assistant","content":[],"model":"m"}}`, "message.provider"},
		{`{"type":"message","message":{"role":"assistant","content":[],"provider":"p"}}`, "message.model"},
		{`{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":3}}`, "message.usage"},
		{`{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"read"}],"provider":"p","model":"m"}}`, "message.content[0].arguments"},
		{`{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"read","arguments":[]}],"provider":"p","model":"m"}}`, "message.content[0].arguments"},
		{`{"type":"message","message":{"role":"assistant","content":[{"type":"thinking","thinking":"x","redacted":"yes"}],"provider":"p","model":"m"}}`, "message.content[0].redacted"},
		{`{"type":"message","message":{"role":"toolResult","toolName":"read","content":[]}}`, "message.toolCallId"},
		{`{"type":"message","message":{"role":"toolResult","toolCallId":"c","content":[]}}`, "message.toolName"},
		{`{"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":"ok"}}`, "message.content"},
		{`{"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":[],"isError":"no"}}`, "message.isError"},
		{`{"type":"message","message":{"role":"bashExecution","output":""}}`, "message.command"},
		{`{"type":"message","message":{"role":"bashExecution","command":"ls","output":"","exitCode":"1"}}`, "message.exitCode"},
		{`{"type":"message","message":{"role":"custom","customType":"x","content":"hi"}}`, "message.display"},
		{`{"type":"message","message":{"role":"branchSummary","summary":"s"}}`, "message.fromId"},
		{`{"type":"message","message":{"role":"compactionSummary","summary":"s","tokensBefore":"9"}}`, "message.tokensBefore"},
		{`{"type":"custom_message","content":"hi","display":true}`, "customType"},
		{`{"type":"custom_message","customType":"x","display":true}`, "content"},
		{`{"type":"custom_message","customType":"x","content":[{"type":"toolCall","id":"c","name":"n","arguments":{}}],"display":true}`, "content[0].type"},
		{`{"type":"custom_message","customType":"x","content":"hi","display":"yes"}`, "display"},
		{`{"type":"compaction","summary":"s","tokensBefore":1,"firstKeptEntryId":5}`, "firstKeptEntryId"},
		{`{"type":"compaction","summary":"s"}`, "tokensBefore"},
		{`{"type":"compaction","summary":"s","tokensBefore":1,"fromHook":"no"}`, "fromHook"},
		{`{"type":"branch_summary","summary":"s"}`, "fromId"},
		{`{"type":"branch_summary","fromId":"root"}`, "summary"},
		{`{"type":"thinking_level_change"}`, "thinkingLevel"},
		{`{"type":"thinking_level_change","thinkingLevel":2}`, "thinkingLevel"},
		{`{"type":"label","label":"x"}`, "targetId"},
		{`{"type":"label","targetId":"t","label":3}`, "label"},
		{`{"type":"label","targetId":"t","label":null}`, "label"},
		{`{"type":"session_info","name":false}`, "name"},
		{`{"type":"custom"}`, "customType"},
		{`{"type":"custom","customType":1}`, "customType"},
		// pi 1.1's entries and fields: pi's appendContextEdit refuses a
		// replacement that is not null and not {content} with string or
		// array content.
		{`{"type":"context_edit","replacement":null}`, "targetId"},
		{`{"type":"context_edit","targetId":7,"replacement":null}`, "targetId"},
		{`{"type":"context_edit","targetId":"t"}`, "replacement"},
		{`{"type":"context_edit","targetId":"t","replacement":"x"}`, "replacement"},
		{`{"type":"context_edit","targetId":"t","replacement":{}}`, "replacement.content"},
		{`{"type":"context_edit","targetId":"t","replacement":{"content":{"type":"text"}}}`, "replacement.content"},
		{`{"type":"usage","provider":"p","model":"m","usage":{}}`, "kind"},
		{`{"type":"usage","kind":"k","model":"m","usage":{}}`, "provider"},
		{`{"type":"usage","kind":"k","provider":"p","usage":{}}`, "model"},
		{`{"type":"usage","kind":"k","provider":"p","model":"m"}`, "usage"},
		{`{"type":"usage","kind":"k","provider":"p","model":"m","usage":{},"note":1}`, "note"},
		{`{"type":"message","message":{"role":"system","content":5}}`, "message.content"},
		{`{"type":"message","message":{"role":"system","content":"","sections":[]}}`, "message.sections"},
		{`{"type":"message","message":{"role":"system","content":"","sections":{"a":1}}}`, "message.sections.a"},
		{`{"type":"message","message":{"role":"system","content":"","toolsAdded":[{"description":"d"}]}}`, "message.toolsAdded[0].name"},
		{`{"type":"message","message":{"role":"system","content":"","toolsRemoved":["read"]}}`, "message.toolsRemoved[0]"},
		{`{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m","thinkingLevel":1}}`, "message.thinkingLevel"},
		{`{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m","responseModel":null}}`, "message.responseModel"},
		{`{"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":[],"usage":1}}`, "message.usage"},
		{`{"type":"compaction","summary":"s","tokensBefore":1,"usage":[]}`, "usage"},
		{`{"type":"compaction","summary":"s","tokensBefore":1,"systemMessage":{"role":"user","content":"hi"}}`, "systemMessage.role"},
		{`{"type":"compaction","summary":"s","tokensBefore":1,"systemMessage":{"role":"system","sections":{"a":false}}}`, "systemMessage.sections.a"},
		{`{"type":"branch_summary","summary":"s","fromId":"root","usage":"free"}`, "usage"},
	} {
		err := tree.CheckLine([]byte(tc.line))
		var se *tree.ShapeError
		if !errors.As(err, &se) {
			t.Errorf("%s: %v, want a *ShapeError at %q", tc.line, err, tc.path)
			continue
		}
		if se.Path != tc.path || se.Reason == "" {
			t.Errorf("%s: path %q (%s), want %q", tc.line, se.Path, se.Reason, tc.path)
		}
	}
}

func TestCheckEntryAccepts(t *testing.T) {
	for _, line := range []string{
		// Hand-built messages without a timestamp, as clients send them.
		`{"type":"message","message":{"role":"user","content":"hi"}}`,
		`{"type":"message","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"AA","mimeType":"image/png"}],"timestamp":1}}`,
		`{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m"}}`,
		`{"type":"message","message":{"role":"assistant","content":[{"type":"thinking","thinking":"t","thinkingSignature":"s"},{"type":"text","text":"x"},{"type":"toolCall","id":"c","name":"n","arguments":{"a":1},"partialJson":"{"}],"api":"a","provider":"p","model":"m","usage":{},"stopReason":"toolUse","timestamp":2}}`,
		`{"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"n","content":[{"type":"text","text":"ok"}],"isError":false,"details":{"x":1}}}`,
		`{"type":"message","message":{"role":"bashExecution","command":"ls","output":"","exitCode":null,"cancelled":true,"truncated":false}}`,
		`{"type":"message","message":{"role":"bashExecution","command":"ls","output":""}}`,
		`{"type":"message","message":{"role":"custom","customType":"x","content":"hi","display":false}}`,
		`{"type":"message","message":{"role":"branchSummary","summary":"s","fromId":"root"}}`,
		`{"type":"message","message":{"role":"compactionSummary","summary":"s","tokensBefore":3}}`,
		`{"type":"custom_message","customType":"x","content":[{"type":"text","text":"a"}],"display":true,"details":null}`,
		`{"type":"compaction","summary":"s","tokensBefore":1}`,
		`{"type":"compaction","summary":"s","firstKeptEntryId":"k","tokensBefore":1e400,"details":[1],"fromHook":true}`,
		`{"type":"branch_summary","summary":"s","fromId":"root","details":{}}`,
		`{"type":"model_change","provider":"p","modelId":"m"}`,
		`{"type":"thinking_level_change","thinkingLevel":"high"}`,
		`{"type":"label","targetId":"t"}`,
		`{"type":"label","targetId":"t","label":"x"}`,
		`{"type":"session_info"}`,
		`{"type":"session_info","name":"n"}`,
		`{"type":"custom","customType":"x","data":[1,2]}`,
		// Unknown types and fields pass untouched.
		`{"type":"something_new","message":7,"whatever":{}}`,
		`{"type":"model_change","provider":"p","modelId":"m","extra":[null]}`,
		`{"type":"message","message":{"role":"user","content":"hi","novel":true}}`,
		// Roles a newer pi may write pass unchecked, as unknown entry
		// types do: pi 1.1 added "system", and a store refusing it lost
		// every descendant of such a line (issue 34). hookMessage is
		// version 2's custom role.
		`{"type":"message","message":{"role":"robot","content":"hi"}}`,
		`{"type":"message","message":{"role":"hookMessage","content":"hi"}}`,
		// pi 1.1's entries and fields.
		`{"type":"context_edit","targetId":"t","replacement":null}`,
		`{"type":"context_edit","targetId":"t","replacement":{"content":"x"}}`,
		`{"type":"context_edit","targetId":"t","replacement":{"content":[{"type":"text","text":"x"}]}}`,
		`{"type":"usage","kind":"cache_warm","provider":"p","model":"m","usage":{"input":0,"cost":{"total":0}},"note":"n"}`,
		`{"type":"message","message":{"role":"system"}}`,
		`{"type":"message","message":{"role":"system","content":"","sections":{"a":"x","b":null},"toolsAdded":[{"name":"read","parameters":{}}],"toolsRemoved":[{"name":"write"}],"timestamp":1}}`,
		`{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m","thinkingLevel":"high","responseModel":"m-2026"}}`,
		`{"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"n","content":[],"usage":{"input":1}}}`,
		`{"type":"compaction","summary":"s","firstKeptEntryId":"c1","tokensBefore":1,"usage":{},"systemMessage":{"role":"system","content":"","sections":{"a":"x"},"timestamp":1}}`,
		`{"type":"branch_summary","summary":"s","fromId":"root","usage":{}}`,
	} {
		line = strings.Replace(line, `{"type":`, `{`+head+`,"type":`, 1)
		if err := tree.CheckLine([]byte(line)); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
}

// TestCheckEntryVectors: every entry pi wrote validates, after migration
// for the older files.
func TestCheckEntryVectors(t *testing.T) {
	dir := conformance.Dir(t)
	// Every set but pi 1.1's refused files (p13: files pi will not open).
	var files []string
	for _, set := range []string{"pi-v1", "pi-v2", "pi-v3", "pi-v3-1.1"} {
		more, _ := filepath.Glob(filepath.Join(dir, set, "*", "*.jsonl"))
		if len(more) == 0 {
			t.Fatalf("no %s files under %s", set, dir)
		}
		for _, p := range more {
			if filepath.Base(filepath.Dir(p)) != "p13-refused-files" {
				files = append(files, p)
			}
		}
	}
	if len(files) < 40 {
		t.Fatalf("found %d vector files under %s", len(files), dir)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		opt := tree.ReadOptions{Rand: rand.NewChaCha8([32]byte{1})}
		plain, err := tree.Read(data, opt)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		opt.Validate, opt.Rand = true, rand.NewChaCha8([32]byte{1})
		checked, err := tree.Read(data, opt)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(checked.Skipped) != len(plain.Skipped) || checked.Len() != plain.Len() {
			t.Errorf("%s: validation skipped %v (without it %v)", p, checked.Skipped, plain.Skipped)
		}
		if checked.Len() == 0 {
			t.Errorf("%s: no entries", p)
		}
	}
}

func TestReadValidate(t *testing.T) {
	file := []byte(`{"type":"session","version":3,"id":"01a22bdc-6ce8-7741-8406-3ad384bc1b94","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}
{"type":"model_change","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z","provider":"p"}
not json
{"type":"message","id":"c","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"x"},{"type":"video"}]}}
`)
	f, err := tree.Read(file, tree.ReadOptions{Validate: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []tree.LineError{{Line: 3, Field: "modelId"}, {Line: 4}, {Line: 5, Field: "message.content[1].type"}}
	if len(f.Skipped) != len(want) {
		t.Fatalf("skipped %v, want lines 3, 4 and 5", f.Skipped)
	}
	for k, w := range want {
		if got := f.Skipped[k]; got.Line != w.Line || got.Field != w.Field || got.Reason == "" {
			t.Errorf("skipped[%d] = %+v, want line %d field %q", k, got, w.Line, w.Field)
		}
	}
	if f.Len() != 1 {
		t.Errorf("%d entries kept, want 1", f.Len())
	}
	if plain, _ := tree.Read(file, tree.ReadOptions{}); plain.Len() != 3 {
		t.Errorf("without Validate %d entries, want 3 (pi keeps them)", plain.Len())
	}
	_, err = tree.Read(file, tree.ReadOptions{Validate: true, Strict: true})
	var le *tree.LineError
	if !errors.As(err, &le) || le.Line != 3 || le.Field != "modelId" || !strings.Contains(le.Error(), "line 3: modelId: ") {
		t.Errorf("strict: %v, want line 3, field modelId", err)
	}
}

// FuzzCheckEntry: the checker never panics, and an entry it accepts keeps
// being accepted with unknown members added (they pass untouched).
func FuzzCheckEntry(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","message":{"role":"user","content":[{"type":"text","text":"a"}]}}`,
		`{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{}}],"provider":"p","model":"m"}}`,
		`{"type":"compaction","summary":"s","tokensBefore":1}`,
		`{"type":"custom_message","customType":"x","content":"hi","display":true}`,
		`{"type":"label","targetId":"t"}`,
		`[1,{"a":null}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := jsjson.ParseValue(data)
		if err != nil {
			return
		}
		err = tree.CheckEntry(&v)
		var se *tree.ShapeError
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("%T %v", err, err)
		}
		if err != nil || v.Kind != tree.KindObject {
			return
		}
		v.Set("zzUnknownMember", tree.Value{Kind: tree.KindArray})
		if err := tree.CheckEntry(&v); err != nil {
			t.Fatalf("an unknown member made %s invalid: %v", data, err)
		}
	})
}

// TestCheckEntryMutations drops each member of valid entries in turn: a
// dropped required member is reported at its own path, and nothing else is.
func TestCheckEntryMutations(t *testing.T) {
	for _, tc := range []struct {
		line     string
		required []string // top-level members of message (or of the entry) that are required
		in       string   // "" for the entry, "message" for its message
	}{
		{`{"type":"model_change","provider":"p","modelId":"m"}`, []string{"type", "provider", "modelId"}, ""},
		{`{"type":"compaction","summary":"s","firstKeptEntryId":"k","tokensBefore":1,"details":{},"fromHook":false}`, []string{"type", "summary", "tokensBefore"}, ""},
		{`{"type":"custom_message","customType":"x","content":"hi","display":true,"details":{}}`, []string{"type", "customType", "content", "display"}, ""},
		{`{"type":"label","targetId":"t","label":"l"}`, []string{"type", "targetId"}, ""},
		{`{"type":"message","message":{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{},"stopReason":"stop","timestamp":1}}`, []string{"role", "content", "provider", "model"}, "message"},
		{`{"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"n","content":[],"isError":false,"timestamp":1}}`, []string{"role", "toolCallId", "toolName", "content"}, "message"},
		{`{"type":"message","message":{"role":"bashExecution","command":"c","output":"o","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1}}`, []string{"role", "command", "output"}, "message"},
	} {
		v, err := jsjson.ParseValue([]byte(tc.line))
		if err != nil {
			t.Fatal(err)
		}
		obj := &v
		if tc.in != "" {
			obj, _ = v.Get(tc.in)
		}
		for _, m := range append([]tree.Member(nil), obj.Obj...) {
			mut, _ := jsjson.ParseValue([]byte(tc.line))
			o := &mut
			if tc.in != "" {
				o, _ = mut.Get(tc.in)
			}
			o.Delete(m.Key)
			err := tree.CheckEntry(&mut)
			isReq := false
			for _, r := range tc.required {
				isReq = isReq || r == m.Key
			}
			path := m.Key
			if tc.in != "" {
				path = tc.in + "." + m.Key
			}
			var se *tree.ShapeError
			switch {
			case isReq && (!errors.As(err, &se) || se.Path != path):
				t.Errorf("%s without %s: %v, want an error at %s", tc.line, m.Key, err, path)
			case !isReq && err != nil:
				t.Errorf("%s without optional %s: %v", tc.line, m.Key, err)
			}
		}
	}
}

// TestCheckEditTargetVectors replays pi 1.1's calls: every context edit pi
// stored passes CheckEntry and CheckEditTarget against the session as it
// stood, and every edit pi refused is refused for pi's reason.
func TestCheckEditTargetVectors(t *testing.T) {
	dir := conformance.Dir(t)
	reasons := map[string]string{
		"not found":                   "unknown entry",
		"is not on the active branch": "is not on the branch",
		"does not contribute":         "does not contribute editable model content",
	}
	stored, refused := 0, 0
	for _, c := range conformance.Cases(t, dir, "pi-v3-1.1") {
		data, err := os.ReadFile(filepath.Join(c, "session.jsonl"))
		if os.IsNotExist(err) {
			continue
		}
		f, err := tree.Read(data, tree.ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		ops := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(c, "ops.json")))
		created := map[string]bool{} // the entries that existed at the call
		lookup := func(id string) *tree.Entry {
			if !created[id] {
				return nil
			}
			e, _ := f.Get(id)
			return e
		}
		leaf := ""
	replay:
		for _, op := range ops.Arr {
			name, _ := conformance.Field(op, "op")
			result, _ := conformance.Field(op, "result")
			switch name.Str {
			case "createBranchedSession", "openExistingFile":
				break replay // the file is another session from here on
			case "branch":
				id, _ := conformance.Field(op, "id")
				leaf = id.Str
				continue
			case "resetLeaf":
				leaf = ""
				continue
			case "appendContextEdit":
				if msg, ok := conformance.Field(op, "error"); ok {
					refused++
					target, _ := conformance.Field(op, "targetId")
					repl, _ := conformance.Field(op, "replacement")
					edit := tree.Value{Kind: tree.KindObject}
					edit.Set("type", tree.Value{Kind: tree.KindString, Str: "context_edit"})
					edit.Set("targetId", target)
					edit.Set("replacement", repl)
					if strings.HasPrefix(msg.Str, "Context edit replacement") {
						var se *tree.ShapeError
						if err := tree.CheckLine(edit.AppendJSON(nil)); !errors.As(err, &se) || !strings.HasPrefix(se.Path, "replacement") {
							t.Errorf("%s: %s: CheckLine gave %v, want a replacement error", c, msg.Str, err)
						}
						continue
					}
					err := tree.CheckEditTarget(target.Str, leaf, lookup)
					matched := false
					for piSays, weSay := range reasons {
						if strings.Contains(msg.Str, piSays) {
							matched = true
							if err == nil || !strings.Contains(err.Error(), weSay) || !strings.HasPrefix(err.Error(), "targetId: ") {
								t.Errorf("%s: pi: %s; CheckEditTarget: %v", c, msg.Str, err)
							}
						}
					}
					if !matched {
						t.Errorf("%s: pi's error %q is none this test knows", c, msg.Str)
					}
					continue
				}
				e, ok := f.Get(result.Str)
				if !ok {
					t.Fatalf("%s: edit %s is not in the file", c, result.Str)
				}
				stored++
				if err := tree.CheckLine(e.Raw); err != nil {
					t.Errorf("%s: %s: %v", c, e.Raw, err)
				}
				v := conformance.MustValue(t, e.Raw)
				target, _ := conformance.Field(v, "targetId")
				if err := tree.CheckEditTarget(target.Str, leaf, lookup); err != nil {
					t.Errorf("%s: pi stored %s: %v", c, e.Raw, err)
				}
			}
			if result.Kind == tree.KindString {
				created[result.Str], leaf = true, result.Str
			}
		}
	}
	if stored < 20 || refused != 4 {
		t.Errorf("checked %d stored and %d refused edits, want at least 20 and 4", stored, refused)
	}
}
