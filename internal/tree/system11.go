package tree

import (
	"strings"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// SystemMessageAt is the system prompt in force at leaf as pi 1.1 replays
// it into a compaction's systemMessage checkpoint: starting from the last
// checkpoint on the path (a compaction's systemMessage), each system
// message on the path appends its text to the content (text blocks joined
// by "\n", messages by "\n\n"), sets its sections (null removes one),
// removes the tools it names in toolsRemoved and adds or replaces those in
// toolsAdded. It is {"role":"system","content",…,"sections"?,
// "toolsAdded"?,"timestamp":ms}, or nil when the path holds neither a
// system message nor a checkpoint (pi then writes none). The rules are
// read off pi 1.1.0's vectors: every checkpoint there is reproduced.
func (s *Session) SystemMessageAt(leaf int, ms int64) []byte {
	if leaf < 0 {
		return nil
	}
	var (
		found    bool
		content  string
		sections = Value{Kind: KindObject}
		tools    []Value
	)
	for _, i := range s.PathIndices(leaf) {
		e := &s.entries[i]
		var m *Value
		switch {
		case e.Kind == KindCompaction:
			v, err := jsjson.ParseValue(e.Raw)
			if err != nil {
				continue
			}
			if m, _ = v.Get("systemMessage"); m == nil || m.Kind != KindObject {
				continue
			}
			// A checkpoint: the state starts again from it.
			found, content, sections, tools = true, "", Value{Kind: KindObject}, nil
		case e.Kind == KindMessage && e.Role == RoleSystem:
			v, err := jsjson.ParseValue(e.Raw)
			if err != nil {
				continue
			}
			if m, _ = v.Get("message"); m == nil || m.Kind != KindObject {
				continue
			}
			found = true
		default:
			continue
		}
		if t := systemText(m); t != "" {
			if content != "" {
				content += "\n\n"
			}
			content += t
		}
		if sec, ok := m.Get("sections"); ok && sec.Kind == KindObject {
			for _, kv := range sec.Obj {
				if kv.Val.Kind == KindNull {
					sections.Delete(kv.Key)
				} else {
					sections.Set(kv.Key, kv.Val)
				}
			}
		}
		if rm, ok := m.Get("toolsRemoved"); ok && rm.Kind == KindArray {
			for _, t := range rm.Arr {
				if k := toolIndex(tools, toolName(&t)); k >= 0 {
					tools = append(tools[:k], tools[k+1:]...)
				}
			}
		}
		if add, ok := m.Get("toolsAdded"); ok && add.Kind == KindArray {
			for _, t := range add.Arr {
				if k := toolIndex(tools, toolName(&t)); k >= 0 {
					tools[k] = t
				} else {
					tools = append(tools, t)
				}
			}
		}
	}
	if !found {
		return nil
	}
	out := Value{Kind: KindObject}
	out.Set("role", Value{Kind: KindString, Str: "system"})
	out.Set("content", Value{Kind: KindString, Str: content})
	if len(sections.Obj) > 0 {
		out.Set("sections", sections)
	}
	if len(tools) > 0 {
		out.Set("toolsAdded", Value{Kind: KindArray, Arr: tools})
	}
	out.Set("timestamp", Value{Kind: KindNumber, Num: float64(ms)})
	return out.AppendJSON(nil)
}

// systemText is a system message's content as text: a string, or its
// text blocks joined by "\n" (images carry none).
func systemText(m *Value) string {
	c, ok := m.Get("content")
	if !ok {
		return ""
	}
	switch c.Kind {
	case KindString:
		return c.Str
	case KindArray:
		var parts []string
		for i := range c.Arr {
			b := &c.Arr[i]
			if t, ok := b.Get("type"); ok && t.Str == "text" {
				if x, ok := b.Get("text"); ok && x.Kind == KindString {
					parts = append(parts, x.Str)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

func toolName(t *Value) string {
	if t.Kind != KindObject {
		return ""
	}
	if n, ok := t.Get("name"); ok {
		return n.Str
	}
	return ""
}

func toolIndex(tools []Value, name string) int {
	for k := range tools {
		if toolName(&tools[k]) == name {
			return k
		}
	}
	return -1
}
