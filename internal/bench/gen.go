package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// Gen makes pi sessions, deterministically from its seed.
type Gen struct {
	r *rand.Rand
}

// NewGen returns a generator; the same seed makes the same sessions.
func NewGen(seed uint64) *Gen { return &Gen{r: rand.New(rand.NewPCG(seed, 0x5e55))} }

// Session is a generated session as it goes on the log.
type Session struct {
	ID   string
	Recs []session.Record // header first
	// Bytes is the JSON of the header and the entries, newlines excluded:
	// what a Store holds for the session (tree.Session.Bytes).
	Bytes int64
}

// EntryIDs returns the ids of the session's entries, in log order.
func (s *Session) EntryIDs() []string {
	ids := make([]string, 0, len(s.Recs)-1)
	for _, r := range s.Recs[1:] {
		ids = append(ids, r.ID)
	}
	return ids
}

// SessionID returns a new random UUID (version 7 layout, random bits).
func (g *Gen) SessionID() string {
	return fmt.Sprintf("%08x-%04x-7%03x-8%03x-%012x", g.r.Uint32(), g.r.Uint32()&0xffff,
		g.r.Uint32()&0xfff, g.r.Uint32()&0xfff, g.r.Uint64()&0xffffffffffff)
}

// words make the prose of generated messages: text that compresses and
// tokenizes like English, not like random bytes.
var words = strings.Fields("the function returns an error when the input is empty so we check the length first " +
	"and then parse the header of each line before building the tree index of every session file")

func (g *Gen) text(n int) string {
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		b.WriteString(words[g.r.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()
}

// Realistic makes a session of n entries with the sizes of real pi
// sessions (pi-mono's fixtures average 1-2 KB a line): turns of a short
// question, an assistant reply with text and a tool call, and a tool result
// of a few KB, chained from one root. Its mean line is about 1.1 KB.
func (g *Gen) Realistic(n int) Session {
	sid := g.SessionID()
	s := Session{ID: sid}
	h := tree.NewHeader(sid, "2026-01-01T00:00:00.000Z", "/home/dev/project", "")
	s.Recs = append(make([]session.Record, 0, n+1), session.Record{Type: "session", Data: h.Raw})
	s.Bytes = int64(len(h.Raw))
	parent := ""
	for i := range n {
		id := fmt.Sprintf("%08x", g.r.Uint32())
		for hasID(s.Recs, id) {
			id = fmt.Sprintf("%08x", g.r.Uint32())
		}
		m := tree.Meta{ID: id, ParentID: parent, Timestamp: fmt.Sprintf("2026-01-01T%02d:%02d:%02d.000Z", i/3600%24, i/60%60, i%60)}
		ts := 1796028684626 + i
		var msg any
		switch i % 3 {
		case 0:
			msg = map[string]any{"role": "user", "content": g.text(50 + g.r.IntN(400)), "timestamp": ts}
		case 1:
			msg = map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": g.text(100 + g.r.IntN(800))},
				map[string]any{"type": "toolCall", "id": fmt.Sprintf("call_%d", i), "name": "read", "arguments": map[string]any{"path": "src/auth.ts"}},
			}, "api": "anthropic-messages", "provider": "anthropic", "model": "claude-3-7-sonnet",
				"usage": map[string]any{"input": 1500, "output": 100, "totalTokens": 1600}, "stopReason": "toolUse", "timestamp": ts}
		default:
			msg = map[string]any{"role": "toolResult", "toolCallId": fmt.Sprintf("call_%d", i-1), "toolName": "read",
				"content": []any{map[string]any{"type": "text", "text": g.text(200 + g.r.IntN(3000))}}, "isError": false, "timestamp": ts}
		}
		raw, err := json.Marshal(msg)
		if err != nil {
			panic(err) // maps of strings and numbers always marshal
		}
		e, err := tree.NewMessage(m, raw)
		if err != nil {
			panic(fmt.Sprintf("generated entry is invalid: %v", err))
		}
		s.Recs = append(s.Recs, session.Record{Type: e.Type(), ID: e.ID, Parent: e.ParentID, Data: e.Raw})
		s.Bytes += int64(len(e.Raw))
		parent = id
	}
	return s
}

// hasID is a linear scan: generated sessions are short, and ids collide
// about once in a hundred million draws.
func hasID(recs []session.Record, id string) bool {
	for _, r := range recs {
		if r.ID == id {
			return true
		}
	}
	return false
}

// Filler builds message entries of a fixed size, the unit of the append
// and create scenarios: every way of writing gets byte-identical lines.
type Filler struct {
	size int
	text string
}

// NewFiller returns a builder of entries of about size bytes of JSON (at
// least the ~150 bytes of an empty message entry).
func NewFiller(size int) *Filler {
	return &Filler{size: size, text: NewGen(1).text(size)}
}

// Message returns the user message of an entry: its text sized so that
// the entry (with an 8-hex id and parent) is about the filler's size.
func (f *Filler) Message(now time.Time) []byte {
	const empty = len(`{"type":"message","id":"00000000","parentId":"00000000","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"","timestamp":1796028684626}}`)
	body := f.text[:max(0, min(len(f.text), f.size-empty))]
	raw := jsjson.AppendString([]byte(`{"role":"user","content":`), body)
	return fmt.Appendf(raw, `,"timestamp":%d}`, now.UnixMilli())
}

// Entry builds entry number k (its id is k+1 in 8 hex digits, unique in
// its session) as a child of parent ("" for a root), stamped now.
func (f *Filler) Entry(k int, parent string, now time.Time) session.Record {
	id := fmt.Sprintf("%08x", k+1)
	m := tree.Meta{ID: id, ParentID: parent, Timestamp: tree.FormatTimestamp(now)}
	e, err := tree.NewMessage(m, f.Message(now))
	if err != nil {
		panic(fmt.Sprintf("filler entry is invalid: %v", err))
	}
	return session.Record{Type: e.Type(), ID: e.ID, Parent: e.ParentID, Data: e.Raw}
}

// Header returns the header record of a new session sid.
func Header(sid string, now time.Time) session.Record {
	h := tree.NewHeader(sid, tree.FormatTimestamp(now), "/home/dev/bench", "")
	return session.Record{Type: "session", Data: h.Raw}
}
