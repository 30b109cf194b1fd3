package apispec_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/apispec"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestSchemasOfNewShapes checks the shapes #17 added, each way: the tree's
// include=entries nodes, the cursor in a write's reply, and context.build's
// body (Middleware checks what the server sends on every test's traffic;
// this checks that the schemas also refuse what they must).
func TestSchemasOfNewShapes(t *testing.T) {
	s := apispec.Load(t)
	const entry = `{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"q"}}`
	const detail = `{"sessionId":"01a22ba6-0000-7000-8000-000000000001","name":null,"cwd":"/w","created":"2026-11-30T09:49:55.817Z",` +
		`"modified":"2026-11-30T09:49:55.817Z","entryCount":0,"lastSeq":1,"parentSession":null,"headerSeq":1,` +
		`"header":{"type":"session","id":"01a22ba6-0000-7000-8000-000000000001"},"labels":{},"leafId":null`
	cases := []struct {
		schema, value string
		valid         bool
	}{
		{"TreeReply", `{"tree":[{"id":"a","type":"message","label":"l","children":[{"id":"b","type":"message","children":[]}]}],"leafId":"b"}`, true},
		{"TreeReply", `{"tree":[{"entry":` + entry + `,"label":"l","labelTimestamp":"t","children":[{"entry":` + entry + `,"children":[]}]}],"leafId":null}`, true},
		{"TreeReply", `{"tree":[{"entry":` + entry + `,"children":[{"id":"b","type":"message","children":[]}]}],"leafId":null}`, false}, // shapes mixed
		{"TreeReply", `{"tree":[{"id":"a","type":"message"}],"leafId":"a"}`, false},                                                     // no children
		{"TreeReply", `{"tree":[{"entry":` + entry + `,"id":"a","children":[]}],"leafId":"a"}`, false},                                  // both shapes at once
		{"CreateResult", `{"sessionId":"01a22ba6-0000-7000-8000-000000000001","lastSeq":3,"entries":[{"id":"a","seq":3}],"cursor":{"client":"w1","leafId":"a","seq":3,"revision":1,"updatedAt":"2026-11-30T09:49:55.817Z"}}`, true},
		{"CreateResult", `{"lastSeq":3,"entries":[]}`, false}, // create names the new session
		{"AppendResult", `{"lastSeq":3,"entries":[{"id":"a","seq":3}]}`, true},
		{"AppendResult", `{"sessionId":"01a22ba6-0000-7000-8000-000000000001","lastSeq":3,"entries":[]}`, false}, // the path names it
		{"AppendResult", `{"lastSeq":3,"entries":[],"cursor":{"client":"w1","leafId":"a"}}`, false},
		{"Detail", detail + `}`, true},
		{"Detail", detail + `,"firstMessage":"q"}`, false}, // list's preview only
		{"ContextBuildRequest", `{"entries":[]}`, true},
		{"ContextBuildRequest", `{"entries":[` + entry + `],"leaf":null,"format":"llm"}`, true},
		{"ContextBuildRequest", `{"leaf":"a"}`, false},
		{"ContextBuildRequest", `{"entries":[{"type":"message"}]}`, false},
		{"ContextBuildRequest", `{"entries":[],"format":"html"}`, false},
		{"CreateRequest", `{"client":"w1","entries":[]}`, true},
		{"CreateRequest", `{"client":"a.b"}`, false},
	}
	for _, c := range cases {
		if err := s.ValidateJSON(c.schema, []byte(c.value)); (err == nil) != c.valid {
			t.Errorf("%s %s: valid=%v, want %v: %v", c.schema, c.value, err == nil, c.valid, err)
		}
	}
}

// TestValidateNATSReply: a reply body is checked against the schema of
// its operation's response for that status, a 413 as an ErrorBody.
func TestValidateNATSReply(t *testing.T) {
	s := apispec.Load(t)
	const errBody = `{"error":{"code":"not_found","message":"sessionId: no such session","field":"sessionId"}}`
	const hit = `{"sessionId":"01a22ba6-0000-7000-8000-000000000001","name":"n","cwd":"/w","entryId":"a","type":"message","role":"user",` +
		`"timestamp":"2026-11-30T09:49:55.817Z","onPath":false,"score":1.5,"snippet":[{"text":"a "},{"text":"b","match":true}]}`
	cases := []struct {
		op     string
		status int
		body   string
		valid  bool
	}{
		{"cursor.get", 200, `{"client":"w1","leafId":"a","seq":3,"revision":7,"updatedAt":"2026-11-30T09:49:55.817Z"}`, true},
		{"cursor.get", 200, `{"client":"w1","leafId":3}`, false},
		{"cursor.get", 404, errBody, true},
		{"cursor.get", 404, `{"message":"gone"}`, false},
		{"cursor.get", 299, `{}`, false},                   // a status the spec does not declare
		{"cursor.delete", 204, `{}`, true},                 // no body declared: NATS's {} is not checked
		{"export", 200, `{"type":"session"}` + "\n", true}, // JSONL: not checked
		{"export", 413, `{"error":{"code":"too_large","message":"reply of 2 MiB exceeds the NATS max_payload"}}`, true},
		{"export", 413, `{"message":"big"}`, false},
		{"list", 200, `{"sessions":[]}`, true},
		{"list", 200, `{"sessions":{}}`, false},
		// Replies are closed: a field the spec does not name is refused,
		// so the spec documents every field the server sends.
		{"create", 201, `{"sessionId":"01a22ba6-0000-7000-8000-000000000001","lastSeq":2,"entries":[{"id":"a","seq":2}],"surprise":1}`, false},
		{"list", 200, `{"sessions":[{"sessionId":"01a22ba6-0000-7000-8000-000000000001","name":null,"cwd":"/","created":"2026-11-30T09:49:55.817Z","modified":"2026-11-30T09:49:55.817Z","entryCount":0,"lastSeq":1,"parentSession":null,"surprise":1}]}`, false},
		{"list", 200, `{"sessions":[{"sessionId":"01a22ba6-0000-7000-8000-000000000001","name":null,"cwd":"/","created":"2026-11-30T09:49:55.817Z","modified":"2026-11-30T09:49:55.817Z","entryCount":0,"lastSeq":1,"parentSession":null}]}`, true},
		{"get", 200, `{"sessionId":"01a22ba6-0000-7000-8000-000000000001","name":null,"cwd":"/","created":"2026-11-30T09:49:55.817Z","modified":"2026-11-30T09:49:55.817Z","entryCount":0,"lastSeq":1,"parentSession":null,"headerSeq":1,"header":{"type":"session","version":3,"id":"01a22ba6-0000-7000-8000-000000000001","timestamp":"2026-11-30T09:49:55.817Z","cwd":"/"},"labels":{},"leafId":null,"surprise":1}`, false},
		{"get", 200, `{"sessionId":"01a22ba6-0000-7000-8000-000000000001","name":null,"cwd":"/","created":"2026-11-30T09:49:55.817Z","modified":"2026-11-30T09:49:55.817Z","entryCount":0,"lastSeq":1,"parentSession":null,"headerSeq":1,"header":{"type":"session","version":3,"id":"01a22ba6-0000-7000-8000-000000000001","timestamp":"2026-11-30T09:49:55.817Z","cwd":"/"},"labels":{},"leafId":null}`, true},
		{"get", 404, `{"error":{"code":"not_found","message":"x","surprise":1}}`, false},
		// search (issue 35): name is absent, not null, when the session has none.
		{"search", 200, `{"hits":[],"total":0}`, true},
		{"search", 200, `{"hits":[` + hit + `],"total":1,"next":"c"}`, true},
		{"search", 200, `{"hits":[` + strings.Replace(hit, `"name":"n",`, `"name":null,`, 1) + `],"total":1}`, false},
		{"search", 200, `{"hits":[` + strings.Replace(hit, `"name":"n",`, ``, 1) + `],"total":1}`, true},
		{"search", 200, `{"hits":[` + strings.Replace(hit, `{"text":"b","match":true}`, `{"text":"b","match":true,"surprise":1}`, 1) + `],"total":1}`, false},
		{"search", 200, `{"hits":[` + strings.Replace(hit, `"onPath":false,`, ``, 1) + `],"total":1}`, false},
		{"search", 400, `{"error":{"code":"invalid","message":"q: position 6: the \" opened here is not closed","field":"q"}}`, true},
	}
	for _, c := range cases {
		i := slices.IndexFunc(wire.Ops, func(o wire.Op) bool { return o.Name == c.op })
		if i < 0 {
			t.Fatalf("no operation %s", c.op)
		}
		if err := s.ValidateNATSReply(wire.Ops[i], c.status, []byte(c.body)); (err == nil) != c.valid {
			t.Errorf("%s %d %s: valid=%v, want %v: %v", c.op, c.status, c.body, err == nil, c.valid, err)
		}
	}
}
