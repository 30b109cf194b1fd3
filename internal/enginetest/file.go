package enginetest

import (
	"fmt"

	"github.com/pifleet/sessionlog/internal/tree"
)

// SessionFile returns a pi session file (JSONL, version 3) with id and n
// entries alternating user and assistant messages in one branch, the
// entries' ids derived from seed: two calls with the same arguments give
// the same bytes (as a retried import sends), other seeds other entries.
func SessionFile(id string, n int, seed uint32) []byte {
	s := tree.NewSession(tree.NewHeader(id, "2026-01-01T00:00:00.000Z", "/w", ""))
	parent := ""
	for i := range n {
		m := tree.Meta{ID: fmt.Sprintf("%08x", seed*1_000_003+uint32(i)), ParentID: parent,
			Timestamp: fmt.Sprintf("2026-01-01T%02d:%02d:%02d.000Z", i/3600%24, i/60%60, i%60)}
		msg := UserMessage(fmt.Sprintf("question %d", i))
		if i%2 == 1 {
			msg = AssistantMessage(fmt.Sprintf("answer %d", i))
		}
		e, err := tree.NewMessage(m, msg)
		if err != nil {
			panic(err)
		}
		s.Append(e)
		parent = m.ID
	}
	return s.AppendJSONL(nil)
}
