package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/pifleet/sessionlog/client"
	"github.com/pifleet/sessionlog/internal/termtext"
	"github.com/pifleet/sessionlog/internal/tree"
)

// agent runs turns of the loop and narrates what reaches the log.
type agent struct {
	s   *client.Session
	out io.Writer
	err error // the first failed write of note
}

func (a *agent) printf(format string, args ...any) { fmt.Fprintf(a.out, format, args...) }

func now() int64 { return time.Now().UnixMilli() }

// ask appends a user message and runs the loop until the model stops
// calling tools: each reply goes to the log together with its tool
// results, as one atomic append. It returns the user message's id.
func (a *agent) ask(ctx context.Context, text string) (string, error) {
	w, err := a.s.AppendMessage(ctx, map[string]any{"role": "user", "content": text, "timestamp": now()})
	if err != nil {
		return "", err
	}
	a.written(w)
	question := w.ID
	for {
		reply, err := complete(a.s.LLMMessages())
		if err != nil {
			return "", err
		}
		specs := []client.Spec{client.Message(reply)}
		results := runTools(reply)
		for _, r := range results {
			specs = append(specs, client.Message(r))
		}
		flushed := a.s.Flushed()
		w, err := a.s.Append(ctx, specs...)
		if err != nil {
			return "", err
		}
		for i, id := range w.IDs {
			a.written(client.Written{ID: id, Seq: w.Seq - uint64(len(w.IDs)-1-i)})
		}
		if !flushed {
			n := len(a.s.Entries())
			a.printf("        → the first assistant message stored the session: header and %d entries, one atomic batch, seqs %d-%d\n",
				n, w.Seq-uint64(n), w.Seq)
		}
		if len(results) == 0 {
			return question, nil
		}
	}
}

// note reports a single-entry write, keeping the first error.
func (a *agent) note(w client.Written, err error) {
	if err != nil {
		if a.err == nil {
			a.err = err
		}
		return
	}
	a.written(w)
}

// written prints one new entry and where it stands: pending in memory, or
// stored at its log sequence.
func (a *agent) written(w client.Written) {
	where := "pending: nothing is stored before the first assistant message"
	if a.s.Flushed() {
		where = fmt.Sprintf("stored, seq %d", w.Seq)
	}
	preview := ""
	if n := find(a.s.Tree(), w.ID); n != nil {
		preview = n.Preview
	}
	a.printf("append  %s %s\n        %s\n", w.ID, preview, where)
}

// find returns the node of entry id.
func find(nodes []*client.Node, id string) *client.Node {
	for _, n := range nodes {
		if n.ID == id {
			return n
		}
		if f := find(n.Children, id); f != nil {
			return f
		}
	}
	return nil
}

// printTree draws the session's tree as pi-ctl tree does (its layout is
// pi's /tree), from what the session would export, with the Writer's leaf
// marked.
func printTree(out io.Writer, s *client.Session) error {
	f, err := tree.Read(s.Export(), tree.ReadOptions{})
	if err != nil {
		return err
	}
	leaf, ok := f.Index(s.LeafID())
	if !ok {
		leaf = -1
	}
	w := bufio.NewWriter(out)
	termtext.WriteTree(w, f.Session, f.Tree(), leaf, "← leaf", 100)
	return w.Flush()
}
