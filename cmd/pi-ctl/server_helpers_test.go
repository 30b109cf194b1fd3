package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/pifleet/sessionlog/internal/testutil"
)

// runCLIEnv runs pi-ctl in-process with the given environment.
func runCLIEnv(t testing.TB, environ map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb, func(k string) string { return environ[k] })
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// background runs pi-ctl in-process until ctx ends; wait returns its exit
// code.
func background(ctx context.Context, args ...string) (stdout, stderr *testutil.SyncBuffer, wait func() int) {
	stdout, stderr = &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, args, strings.NewReader(""), stdout, stderr, func(string) string { return "" })
	}()
	return stdout, stderr, func() int { return <-done }
}

// Entry ids of sessionFile's sessions. The tree:
//
//	m0000001 model change
//	q0000001 user question
//	├─ a0000001 first answer
//	└─ a0000002 second answer (later timestamp)
//	   u0000002 follow-up       ← the default leaf
const (
	idModel    = "m0000001"
	idQuestion = "q0000001"
	idAnswer1  = "a0000001"
	idAnswer2  = "a0000002"
	idFollowUp = "u0000002"
)

// newSessionFile writes a small branched session with a fresh id in cwd.
func newSessionFile(t testing.TB, cwd string) (path, sid string) {
	t.Helper()
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	sid = u.String()
	ts := func(s int) string { return fmt.Sprintf("2026-01-01T00:00:%02d.000Z", s) }
	line := func(v map[string]any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	msg := func(id, parent, role, text string, s int) string {
		m := map[string]any{"role": role, "content": text, "timestamp": 1767225600000 + s*1000}
		if role == "assistant" {
			m["content"] = []any{map[string]any{"type": "text", "text": text}}
			m["provider"], m["model"] = "anthropic", "claude-sonnet-4"
		}
		return line(map[string]any{"type": "message", "id": id, "parentId": parent, "timestamp": ts(s), "message": m})
	}
	lines := []string{
		line(map[string]any{"type": "session", "version": 3, "id": sid, "timestamp": ts(0), "cwd": cwd}),
		line(map[string]any{"type": "model_change", "id": idModel, "parentId": nil, "timestamp": ts(1), "provider": "anthropic", "modelId": "claude-sonnet-4"}),
		msg(idQuestion, idModel, "user", "Why does the salt check fail?", 2),
		msg(idAnswer1, idQuestion, "assistant", "The salt is not Base64.", 3),
		msg(idAnswer2, idQuestion, "assistant", "Let me read auth.ts first.", 4),
		msg(idFollowUp, idAnswer2, "user", "And the fix?", 5),
	}
	path = writeFile(t, sid+".jsonl", strings.Join(lines, "\n")+"\n")
	return path, sid
}

// importedSession imports a fresh session into n and returns its file,
// id and the lastSeq of the import (for --min-seq).
func importedSession(t testing.TB, n *node, cwd string) (path, sid string, lastSeq uint64) {
	t.Helper()
	path, sid = newSessionFile(t, cwd)
	out := mustRun(t, "import", path, "--json", "--http", n.httpURL)
	var r importResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Result != "ok" || r.SessionID != sid {
		t.Fatalf("import %s: %v %q", path, err, out)
	}
	return path, sid, r.LastSeq
}

// seqOf reads the lastSeq of a write command's --json reply.
func seqOf(t testing.TB, out string) uint64 {
	t.Helper()
	var r struct {
		LastSeq uint64 `json:"lastSeq"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.LastSeq == 0 {
		t.Fatalf("no lastSeq in %q: %v", out, err)
	}
	return r.LastSeq
}
