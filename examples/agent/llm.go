package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// The model and the tools of the example: a fake LLM that answers
// deterministically from what it is sent, and two tools, read and grep,
// over a tiny in-memory repository. A real worker puts a provider's API
// and real tools here; the session code in main.go stays as it is.

// repo is the code the agent debugs.
var repo = map[string]string{
	"src/auth.ts": "import { hash } from \"./crypto\";\n" +
		"export function verifySalt(stored: string, salt: string): boolean {\n" +
		"  return stored === hash(salt); // line 23: salt is not Base64-encoded\n}\n",
	"src/crypto.ts": "import { createHash } from \"crypto\";\n" +
		"export function hash(input: string): string {\n" +
		"  return createHash(\"sha256\").update(input).digest(\"hex\");\n}\n",
}

// Provider and model of the fake LLM, as its assistant messages name them.
const (
	provider = "fake"
	model    = "debugger-1"
)

// message is the subset of pi's AgentMessage JSON the fake model reads.
type message struct {
	Role       string  `json:"role"`
	Content    content `json:"content"`
	ToolName   string  `json:"toolName"`
	StopReason string  `json:"stopReason"`
}

// content is a message's content: a string or an array of blocks.
type content []struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (c *content) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*c = content{{Type: "text", Text: s}}
		return nil
	}
	type blocks content
	return json.Unmarshal(b, (*blocks)(c))
}

// complete is the fake LLM: given the conversation (pi's LLM messages), it
// returns the next assistant message. It reacts to the last message only:
// a question about the salt makes it read auth.ts, a question about the
// hash makes it grep, a tool result makes it answer.
func complete(history []json.RawMessage) (map[string]any, error) {
	if len(history) == 0 {
		return nil, fmt.Errorf("the model needs a message")
	}
	var last message
	if err := json.Unmarshal(history[len(history)-1], &last); err != nil {
		return nil, fmt.Errorf("the model cannot read the last message: %w", err)
	}
	text := ""
	if len(last.Content) > 0 {
		text = last.Content[0].Text
	}
	switch {
	case last.Role == "user" && strings.Contains(text, "salt"):
		return assistant("I'll read auth.ts first.", toolCall("call_read", "read", map[string]any{"path": "src/auth.ts"})), nil
	case last.Role == "user" && strings.Contains(text, "hash"):
		return assistant("", toolCall("call_grep", "grep", map[string]any{"pattern": "function hash", "path": "src"})), nil
	case last.Role == "toolResult" && last.ToolName == "read":
		return assistant("Line 23: the salt is compared without Base64-encoding it first."), nil
	case last.Role == "toolResult" && last.ToolName == "grep":
		return assistant("hash() is fine: SHA-256 of its input, hex-encoded. The salt is the problem."), nil
	}
	return assistant("I have nothing to add."), nil
}

func assistant(text string, calls ...map[string]any) map[string]any {
	var blocks []any
	if text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": text})
	}
	stop := "stop"
	for _, c := range calls {
		blocks = append(blocks, c)
		stop = "toolUse"
	}
	return map[string]any{"role": "assistant", "content": blocks, "api": "fake", "provider": provider, "model": model,
		"stopReason": stop, "timestamp": time.Now().UnixMilli()}
}

func toolCall(id, name string, args map[string]any) map[string]any {
	return map[string]any{"type": "toolCall", "id": id, "name": name, "arguments": args}
}

// runTools executes the tool calls of an assistant message and returns
// their toolResult messages, in order.
func runTools(reply map[string]any) []map[string]any {
	var out []map[string]any
	blocks, _ := reply["content"].([]any)
	for _, b := range blocks {
		call, _ := b.(map[string]any)
		if call["type"] != "toolCall" {
			continue
		}
		name, _ := call["name"].(string)
		args, _ := call["arguments"].(map[string]any)
		text, isErr := tool(name, args)
		out = append(out, map[string]any{"role": "toolResult", "toolCallId": call["id"], "toolName": name,
			"content": []any{map[string]any{"type": "text", "text": text}}, "isError": isErr, "timestamp": time.Now().UnixMilli()})
	}
	return out
}

// tool runs one tool over repo.
func tool(name string, args map[string]any) (string, bool) {
	switch name {
	case "read":
		path, _ := args["path"].(string)
		if src, ok := repo[path]; ok {
			return src, false
		}
		return "no such file: " + path, true
	case "grep":
		pattern, _ := args["pattern"].(string)
		dir, _ := args["path"].(string)
		var hits []string
		for path, src := range repo {
			if !strings.HasPrefix(path, dir+"/") {
				continue
			}
			for i, line := range strings.Split(src, "\n") {
				if strings.Contains(line, pattern) {
					hits = append(hits, fmt.Sprintf("%s:%d:%s", path, i+1, line))
				}
			}
		}
		sort.Strings(hits)
		return strings.Join(hits, "\n"), false
	}
	return "unknown tool " + name, true
}
