package apispec_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/apispec"
	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/tree"
)

// One source of rules: the spec's Entry schema and internal/tree's
// CheckLine must accept and refuse the same entries, or clients that
// validate with the schema would be told otherwise by the server.

// agree checks one line through both and reports a disagreement.
func agree(t *testing.T, s *apispec.Spec, what string, line []byte) (valid bool) {
	t.Helper()
	goErr := tree.CheckLine(line)
	specErr := s.ValidateJSON("Entry", line)
	if (goErr == nil) != (specErr == nil) {
		t.Errorf("%s: internal/tree says %v, the spec's Entry says %v\n\t%s", what, orValid(goErr), orValid(specErr), line)
	}
	return goErr == nil
}

func orValid(err error) any {
	if err == nil {
		return "valid"
	}
	return err
}

// TestEntrySchemaAgreesOnVectors: every line of every conformance vector's
// session file (pi-v1, pi-v2 and pi-v3; headers included: to both they are
// an entry of a type pi's entries do not have).
func TestEntrySchemaAgreesOnVectors(t *testing.T) {
	s := apispec.Load(t)
	dir := conformance.Dir(t)
	n := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			rel, _ := filepath.Rel(dir, path)
			agree(t, s, rel+":"+strconv.Itoa(i+1), line)
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("only %d lines in the vectors under %s", n, dir)
	}
}

// TestEntrySchemaAgreesOnRules: entries that each break one rule of
// internal/tree/validate.go (invalid) or sit on its edge (valid).
func TestEntrySchemaAgreesOnRules(t *testing.T) {
	s := apispec.Load(t)
	const (
		user = `{"role":"user","content":"hi"}`
		asst = `"role":"assistant","provider":"p","model":"m"`
	)
	cases := []struct {
		name  string
		valid bool
		entry string
	}{
		// every entry
		{"not an object", false, `[1]`},
		{"no type", false, `{"id":"a"}`},
		{"type not a string", false, `{"type":1}`},
		{"id not a string", false, `{"type":"x","id":1}`},
		{"parentId a number", false, `{"type":"x","parentId":3}`},
		{"parentId null", true, `{"type":"x","parentId":null}`},
		{"timestamp a number", false, `{"type":"x","timestamp":1}`},
		{"unknown type, any fields", true, `{"type":"x","message":7,"summary":false}`},
		// message
		{"message missing", false, `{"type":"message"}`},
		{"message not an object", false, `{"type":"message","message":"hi"}`},
		{"role missing", false, `{"type":"message","message":{"content":"hi"}}`},
		{"role not a string", false, `{"type":"message","message":{"role":1,"content":"hi"}}`},
		{"role system (pi 1.1)", true, `{"type":"message","message":{"role":"system","content":"hi","sections":{"a":"x","b":null},"toolsAdded":[{"name":"read"}]}}`},
		{"role unknown: a newer pi's, passes", true, `{"type":"message","message":{"role":"robot","content":"hi"}}`},
		{"context_edit", true, `{"type":"context_edit","targetId":"a","replacement":{"content":"x"}}`},
		{"context_edit omitting", true, `{"type":"context_edit","targetId":"a","replacement":null}`},
		{"context_edit replacement without content", false, `{"type":"context_edit","targetId":"a","replacement":{}}`},
		{"usage", true, `{"type":"usage","kind":"cache_warm","provider":"p","model":"m","usage":{"input":1,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":1,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}`},
		{"message timestamp a string", false, `{"type":"message","message":{"role":"user","content":"hi","timestamp":"1"}}`},
		{"user", true, `{"type":"message","message":` + user + `,"extra":{"kept":true}}`},
		{"user content missing", false, `{"type":"message","message":{"role":"user"}}`},
		{"user content a number", false, `{"type":"message","message":{"role":"user","content":1}}`},
		{"user image block", true, `{"type":"message","message":{"role":"user","content":[{"type":"image","data":"d","mimeType":"image/png"}]}}`},
		{"user thinking block", false, `{"type":"message","message":{"role":"user","content":[{"type":"thinking","thinking":"t"}]}}`},
		{"block not an object", false, `{"type":"message","message":{"role":"user","content":["hi"]}}`},
		{"block without type", false, `{"type":"message","message":{"role":"user","content":[{"text":"hi"}]}}`},
		{"text block without text", false, `{"type":"message","message":{"role":"user","content":[{"type":"text"}]}}`},
		{"textSignature a number", false, `{"type":"message","message":{"role":"user","content":[{"type":"text","text":"t","textSignature":1}]}}`},
		{"image without mimeType", false, `{"type":"message","message":{"role":"user","content":[{"type":"image","data":"d"}]}}`},
		{"assistant", true, `{"type":"message","message":{` + asst + `,"content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"t","redacted":false},{"type":"toolCall","id":"c","name":"read","arguments":{}}],"usage":{},"stopReason":"stop"}}`},
		{"assistant content a string", false, `{"type":"message","message":{` + asst + `,"content":"a"}}`},
		{"assistant without model", false, `{"type":"message","message":{"role":"assistant","provider":"p","content":[]}}`},
		{"assistant usage a number", false, `{"type":"message","message":{` + asst + `,"content":[],"usage":1}}`},
		{"assistant image block", false, `{"type":"message","message":{` + asst + `,"content":[{"type":"image","data":"d","mimeType":"m"}]}}`},
		{"toolCall arguments a string", false, `{"type":"message","message":{` + asst + `,"content":[{"type":"toolCall","id":"c","name":"n","arguments":"{}"}]}}`},
		{"thinking redacted a string", false, `{"type":"message","message":{` + asst + `,"content":[{"type":"thinking","thinking":"t","redacted":"no"}]}}`},
		{"toolResult", true, `{"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"n","content":[],"isError":false}}`},
		{"toolResult without toolName", false, `{"type":"message","message":{"role":"toolResult","toolCallId":"c","content":[]}}`},
		{"toolResult content a string", false, `{"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"n","content":"out"}}`},
		{"toolResult isError a string", false, `{"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"n","content":[],"isError":"no"}}`},
		{"bashExecution exitCode null", true, `{"type":"message","message":{"role":"bashExecution","command":"ls","output":"","exitCode":null}}`},
		{"bashExecution exitCode a string", false, `{"type":"message","message":{"role":"bashExecution","command":"ls","output":"","exitCode":"0"}}`},
		{"bashExecution without output", false, `{"type":"message","message":{"role":"bashExecution","command":"ls"}}`},
		{"bashExecution truncated a number", false, `{"type":"message","message":{"role":"bashExecution","command":"ls","output":"","truncated":1}}`},
		{"custom message without display", false, `{"type":"message","message":{"role":"custom","customType":"c","content":"x"}}`},
		{"custom message", true, `{"type":"message","message":{"role":"custom","customType":"c","content":[{"type":"text","text":"x"}],"display":true}}`},
		{"branchSummary message without fromId", false, `{"type":"message","message":{"role":"branchSummary","summary":"s"}}`},
		{"compactionSummary tokensBefore a string", false, `{"type":"message","message":{"role":"compactionSummary","summary":"s","tokensBefore":"1"}}`},
		// the other entry types
		{"model_change without modelId", false, `{"type":"model_change","provider":"p"}`},
		{"model_change", true, `{"type":"model_change","provider":"p","modelId":"m"}`},
		{"thinking_level_change a number", false, `{"type":"thinking_level_change","thinkingLevel":1}`},
		{"compaction without tokensBefore", false, `{"type":"compaction","summary":"s"}`},
		{"compaction firstKeptEntryId a number", false, `{"type":"compaction","summary":"s","tokensBefore":1,"firstKeptEntryId":2}`},
		{"compaction", true, `{"type":"compaction","summary":"s","tokensBefore":1.5,"fromHook":true}`},
		{"branch_summary fromHook a string", false, `{"type":"branch_summary","summary":"s","fromId":"a","fromHook":"yes"}`},
		{"label without targetId", false, `{"type":"label","label":"l"}`},
		{"label null", false, `{"type":"label","targetId":"a","label":null}`},
		{"label cleared", true, `{"type":"label","targetId":"a"}`},
		{"session_info name a number", false, `{"type":"session_info","name":1}`},
		{"session_info without name", true, `{"type":"session_info"}`},
		{"custom without customType", false, `{"type":"custom","data":{}}`},
		{"custom_message content a number", false, `{"type":"custom_message","customType":"c","content":1,"display":false}`},
		{"custom_message without display", false, `{"type":"custom_message","customType":"c","content":"x"}`},
		{"custom_message", true, `{"type":"custom_message","customType":"c","content":"x","display":false,"details":{}}`},
	}
	for _, c := range cases {
		if got := agree(t, s, c.name, []byte(c.entry)); got != c.valid {
			t.Errorf("%s: internal/tree says valid=%v, the table %v: fix the table", c.name, got, c.valid)
		}
	}
}
