package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

const fileContextHelp = `Usage: pi-ctl file context FILE [--leaf ID|null] [--llm] [--json] [--full]

Shows what pi would send to the model from a leaf: the path from the root,
the thinking level and model in effect, and the messages (pi's
buildSessionContext). Without --leaf, the leaf is pi's default: the last
entry in the file. "--leaf null" is the empty context pi has after
resetLeaf.

--llm converts the messages as pi's convertToLlm does (summaries and custom
messages become user messages). --json prints {"leafId","path",
"thinkingLevel","model","contextEntryIds","messages"}; contextEntryIds are
the entries selected for the context before edits apply (pi 1.1's
buildContextEntries). The transcript ends with the session's usage by
provider/model, as "file info" shows it. The text transcript cuts long tool
output, thinking and arguments; --full prints everything.
`

func runFileContext(_ context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl file context")
	var leaf leafFlag
	fs.Var(&leaf, "leaf", "build the context for entry `ID` (or null)")
	llm := fs.Bool("llm", false, "show the messages converted for the LLM")
	asJSON := fs.Bool("json", false, "print a JSON object")
	full := fs.Bool("full", false, "do not cut long text in the transcript")
	pos, err := parseArgs(e, fs, fileContextHelp, args, "FILE")
	if err != nil {
		return err
	}
	f, err := loadSession(e, pos[0], tree.ReadOptions{})
	if err != nil {
		return err
	}
	i, err := leaf.resolve(f.Session, displayName(pos[0]))
	if err != nil {
		return err
	}
	c := f.ContextAt(i)
	if *asJSON {
		out := c.AppendJSON(nil, tree.ContextOptions{LLM: *llm, EntryIDs: true})
		_, err := e.stdout.Write(append(out, '\n'))
		return err
	}
	msgs := c.Messages
	if *llm {
		msgs = c.LLMMessages()
	}
	w := bufio.NewWriter(e.stdout)
	w.WriteString(contextHeading(&c, len(msgs), *llm))
	t := transcript{w: w, full: *full}
	for k := range msgs {
		t.message(k+1, msgs[k].JSON)
	}
	// pi 1.1's usage breakdown, of the whole session as pi's /session
	// shows it (not of this context).
	if usage := f.UsageBreakdown(); len(usage) > 0 {
		w.WriteString("\nusage of the session:\n")
		for _, u := range usage {
			w.WriteString("  " + usageText(u) + "\n")
		}
	}
	return w.Flush()
}

// contextHeading is the first line of the transcript: leaf, path length,
// model, thinking level, number of messages.
func contextHeading(c *tree.Context, n int, llm bool) string {
	leaf := "leaf null (the empty context after resetLeaf)"
	if !c.Null {
		leaf = "leaf " + tree.Printable(c.LeafID)
	}
	model := "none"
	if c.Model != nil {
		if v, err := jsjson.ParseValue(c.Model); err == nil {
			model = modelName(&v, "modelId")
		}
	}
	thinking := "(unset)"
	if c.Thinking != nil {
		thinking = tree.Printable(jsjson.ToString(c.Thinking))
	}
	kind := "messages"
	if llm {
		kind = "LLM messages"
	}
	return fmt.Sprintf("%s · %s on the path · model %s · thinking %s · %d %s\n\n",
		leaf, plural(len(c.Path), "entry"), model, thinking, n, kind)
}

// modelName is "provider/model" from an object holding "provider" and the
// given model key ("modelId" in a context, "model" in an assistant message).
func modelName(v *tree.Value, modelKey string) string {
	p, m := strOf(v, "provider"), strOf(v, modelKey)
	if p == "" && m == "" {
		return ""
	}
	return tree.Printable(p + "/" + m)
}

// strOf returns v[key] when it is a string, else "".
func strOf(v *tree.Value, key string) string {
	if f, ok := v.Get(key); ok && f.Kind == tree.KindString {
		return f.Str
	}
	return ""
}

// numOf returns v[key] as text when it is a number, else "".
func numOf(v *tree.Value, key string) string {
	if f, ok := v.Get(key); ok && f.Kind == tree.KindNumber {
		return jsjson.FormatNumber(f.Num)
	}
	return ""
}

// boolOf reports whether v[key] is true.
func boolOf(v *tree.Value, key string) bool {
	f, ok := v.Get(key)
	return ok && f.Kind == tree.KindBool && f.Bool
}

// joinNonEmpty joins the non-empty parts with sep.
func joinNonEmpty(sep string, parts ...string) string {
	kept := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, sep)
}
