package apispec_test

import (
	"testing"

	"github.com/pifleet/sessionlog/internal/apispec"
)

// TestSchemasOfNewShapes checks the shapes #17 added, each way: the tree's
// include=entries nodes, the cursor in a write's reply, and context.build's
// body (Middleware checks what the server sends on every test's traffic;
// this checks that the schemas also refuse what they must).
func TestSchemasOfNewShapes(t *testing.T) {
	s := apispec.Load(t)
	const entry = `{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"q"}}`
	cases := []struct {
		schema, value string
		valid         bool
	}{
		{"TreeReply", `{"tree":[{"id":"a","type":"message","label":"l","children":[{"id":"b","type":"message","children":[]}]}],"leafId":"b"}`, true},
		{"TreeReply", `{"tree":[{"entry":` + entry + `,"label":"l","labelTimestamp":"t","children":[{"entry":` + entry + `,"children":[]}]}],"leafId":null}`, true},
		{"TreeReply", `{"tree":[{"entry":` + entry + `,"children":[{"id":"b","type":"message","children":[]}]}],"leafId":null}`, false}, // shapes mixed
		{"TreeReply", `{"tree":[{"id":"a","type":"message"}],"leafId":"a"}`, false},                                                     // no children
		{"TreeReply", `{"tree":[{"entry":` + entry + `,"id":"a","children":[]}],"leafId":"a"}`, false},                                  // both shapes at once
		{"WriteResult", `{"sessionId":"01a22ba6-0000-7000-8000-000000000001","lastSeq":3,"entries":[{"id":"a","seq":3}],"cursor":{"client":"w1","leafId":"a","seq":3,"revision":1,"updatedAt":"2026-11-30T09:49:55.817Z"}}`, true},
		{"WriteResult", `{"lastSeq":3,"entries":[],"cursor":{"client":"w1","leafId":"a"}}`, false},
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
