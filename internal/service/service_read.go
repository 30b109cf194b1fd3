package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// The reads of a session return the freshness of what they read (see
// store.Freshness) beside it: a reply's freshness headers describe its body.

// Get returns the session's detail.
func (s *Service) Get(ctx context.Context, sid string, usage bool) (wire.Detail, store.Freshness, error) {
	var out wire.Detail
	f, err := s.doc(ctx, sid, func(d *store.Doc) error {
		out.Info = d.Info()
		out.HeaderSeq = d.HeaderSeq
		out.Header = append(json.RawMessage(nil), d.Tree.Header.Raw...)
		out.Labels = d.Tree.Labels()
		if l := d.Tree.LeafID(); l != "" {
			out.LeafID = &l
		}
		if usage {
			rows := []wire.UsageRow{}
			for _, u := range d.Tree.UsageBreakdown() {
				rows = append(rows, wire.UsageRow{Key: u.Key, Cost: u.Cost, Tokens: u.Tokens})
			}
			out.UsageBreakdown = &rows
		}
		return nil
	})
	return out, f, err
}

// List returns a page of the catalog.
func (s *Service) List(f store.ListFilter) ([]wire.Info, string, store.Freshness) {
	return store.List(s.Store, f)
}

// Entries returns up to limit entries with Seq > afterSeq, and the
// session's last sequence.
func (s *Service) Entries(ctx context.Context, sid string, afterSeq uint64, limit int) (wire.EntriesReply, store.Freshness, error) {
	if limit <= 0 {
		limit = 1000
	}
	limit = min(limit, 10000)
	var out wire.EntriesReply
	f, err := s.doc(ctx, sid, func(d *store.Doc) error {
		out.LastSeq = d.LastSeq
		// Seqs increase: binary search the start.
		lo, hi := 0, len(d.Seqs)
		for lo < hi {
			m := (lo + hi) / 2
			if d.Seqs[m] <= afterSeq {
				lo = m + 1
			} else {
				hi = m
			}
		}
		for i := lo; i < len(d.Seqs); i++ {
			// A page never ends inside a run of one sequence (a fork's
			// inherited entries may share its header's, session.PathSeqs):
			// the next page, after that sequence, would skip the rest.
			if n := len(out.Entries); n >= limit && out.Entries[n-1].Seq != d.Seqs[i] {
				break
			}
			out.Entries = append(out.Entries, wire.SeqEntry{Seq: d.Seqs[i], Entry: append(json.RawMessage(nil), d.Tree.Entry(i).Raw...)})
		}
		return nil
	})
	return out, f, err
}

// Leaf selects the leaf of a tree or context request.
type Leaf struct {
	ID     string // an entry id
	Null   bool   // the null leaf (before the first entry)
	Client string // the client's cursor (default leaf when it has none)

	cursor bool // ID is the leaf of Client's cursor (for the error's field)
}

// resolve returns the entry index for l in d (-1 for null).
func (s *Service) resolve(ctx context.Context, sid string, l Leaf) (Leaf, error) {
	if l.Client == "" || l.ID != "" || l.Null {
		return l, nil
	}
	if err := session.ValidClientID(l.Client); err != nil {
		return l, err
	}
	c, err := s.Cursors.Get(ctx, sid, l.Client)
	if errors.Is(err, wire.ErrNotFound) {
		return Leaf{}, nil // no cursor: pi's default leaf
	}
	if err != nil {
		return l, err
	}
	// The cursor may name an entry written through another node a moment
	// ago: wait (briefly) until this Store has it.
	wait := s.CursorWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := store.WaitAt(wctx, s.Store, c.Seq); err != nil {
		return l, err
	}
	return Leaf{ID: c.LeafID, Null: c.LeafID == "", cursor: true}, nil
}

func leafIndex(t *tree.Session, l Leaf) (int, error) {
	switch {
	case l.Null:
		return -1, nil
	case l.ID != "":
		i, ok := t.Index(l.ID)
		if !ok {
			field := "leaf"
			if l.cursor {
				field = "client"
			}
			return 0, wire.Field(field, fmt.Errorf("entry %q is not in the session: %w", l.ID, wire.ErrNotFound))
		}
		return i, nil
	}
	return t.Len() - 1, nil
}

// TreeJSON returns {"tree":[{"id","type","label"?,"children"}],"leafId"}
// with leafId the requested leaf (the client's cursor or the default leaf);
// with entries, the nodes are pi's getTree() ones ({"entry","label"?,
// "labelTimestamp"?,"children"}). flat returns wire.TreeFlatReply's
// {"nodes","roots","leafId"} instead, the same nodes in one list.
func (s *Service) TreeJSON(ctx context.Context, sid string, l Leaf, entries, flat bool) ([]byte, store.Freshness, error) {
	var out []byte
	f, err := s.atLeaf(ctx, sid, l, func(d *store.Doc, i int) {
		nodes := d.Tree.Tree()
		opt := tree.TreeJSONOptions{Type: true, Label: true, Entries: entries}
		if flat {
			out = append(out, `{"nodes":`...)
			out = d.Tree.AppendFlatTreeJSON(out, nodes, opt)
			out = append(out, `,"roots":[`...)
			first := true
			for _, n := range nodes {
				if n.Depth == 0 {
					if !first {
						out = append(out, ',')
					}
					first = false
					out = jsjson.AppendString(out, d.Tree.Entry(n.Index).ID)
				}
			}
			out = append(out, ']')
		} else {
			out = append(out, `{"tree":`...)
			out = d.Tree.AppendTreeJSON(out, nodes, opt)
		}
		out = append(out, `,"leafId":`...)
		if i < 0 {
			out = append(out, "null"...)
		} else {
			out = jsjson.AppendString(out, d.Tree.Entry(i).ID)
		}
		out = append(out, '}')
	})
	return out, f, err
}

// atLeaf runs fn with the session and the index of the leaf l selects (-1:
// the null leaf), once l is resolved (a client's cursor waited for).
func (s *Service) atLeaf(ctx context.Context, sid string, l Leaf, fn func(d *store.Doc, i int)) (store.Freshness, error) {
	l, err := s.resolve(ctx, sid, l)
	if err != nil {
		return store.Freshness{}, err
	}
	return s.doc(ctx, sid, func(d *store.Doc) error {
		i, err := leafIndex(d.Tree, l)
		if err == nil {
			fn(d, i)
		}
		return err
	})
}

// ContextJSON returns pi's context for the leaf as
// {"leafId","path","thinkingLevel","model","contextEntryIds","messages"};
// llm converts the messages as pi's convertToLlm does.
func (s *Service) ContextJSON(ctx context.Context, sid string, l Leaf, llm bool) ([]byte, store.Freshness, error) {
	var out []byte
	f, err := s.atLeaf(ctx, sid, l, func(d *store.Doc, i int) {
		c := d.Tree.ContextAt(i)
		out = c.AppendJSON(make([]byte, 0, c.SizeHint()), tree.ContextOptions{LLM: llm, EntryIDs: true})
	})
	return out, f, err
}

// BuildContextJSON returns pi's context, as ContextJSON, over entries
// given by the client instead of stored ones (see wire.ContextBuildRequest):
// leaf is an entry of them, null, or absent (the last entry). Nothing is
// stored or read. A parent that is not among the entries makes a root, as
// when pi loads such a file (pi wrote one: conformance p04-forks.fork1).
func (s *Service) BuildContextJSON(entries []json.RawMessage, leaf wire.NullableID, llm bool) ([]byte, error) {
	if entries == nil {
		return nil, wire.Invalid("entries", "required: the entries to build the context of (may be [])")
	}
	sess, err := s.draftSession(tree.Header{}, entries, true)
	if err != nil {
		return nil, err
	}
	i := sess.Len() - 1
	switch {
	case leaf.Null:
		i = -1
	case leaf.Set:
		var ok bool
		if i, ok = sess.Index(leaf.ID); !ok {
			return nil, wire.Invalid("leaf", fmt.Sprintf("%q is not an entry of the request", leaf.ID))
		}
	}
	c := sess.ContextAt(i)
	return c.AppendJSON(make([]byte, 0, c.SizeHint()), tree.ContextOptions{LLM: llm, EntryIDs: true}), nil
}

// Export returns the session as a pi v3 JSONL file.
func (s *Service) Export(ctx context.Context, sid string) ([]byte, store.Freshness, error) {
	var out []byte
	f, err := s.doc(ctx, sid, func(d *store.Doc) error {
		out = d.Tree.AppendJSONL(make([]byte, 0, d.Tree.Bytes()+d.Tree.Len()+1))
		return nil
	})
	return out, f, err
}

// Import stores a pi JSONL file (any version) as a new session. Like pi
// it skips malformed lines, and also entries that are not of pi's shapes
// (tree.CheckEntry), listing each in Skipped with its line, field and
// reason; with req.Strict the first such line is a *wire.FieldError
// ("line 7.message.role") and nothing is stored.
func (s *Service) Import(ctx context.Context, req wire.ImportRequest) (wire.ImportResult, error) {
	res, err := writer.ImportWith(ctx, s.Log, req.File, tree.ReadOptions{Rand: s.Rand, Strict: req.Strict, Validate: true}, s.Retry)
	if err == nil {
		s.noteAck(res.SessionID, res.LastSeq)
	}
	return res, err
}

// Fork stores the path to entryID as a new session (pi's
// createBranchedSession; pi11: as pi 1.1's, re-chained over the labels).
// With a registry of forks (Forks) the fork copies nothing: it stores its
// header, naming the parent and the fork point, and the path's labels
// written again (writer.ForkByReference); a fork of a session that is
// itself session.MaxForkDepth forks deep copies.
func (s *Service) Fork(ctx context.Context, sid, entryID string, pi11 bool) (string, uint64, error) {
	var src *tree.Session
	var ref *writer.ForkRef
	_, err := s.doc(ctx, sid, func(d *store.Doc) error {
		i, ok := d.Tree.Index(entryID)
		if !ok {
			return wire.Field("entryId", fmt.Errorf("entry %q is not in the session: %w", entryID, wire.ErrNotFound))
		}
		if s.Forks != nil && d.ForkDepth() < session.MaxForkDepth {
			labels, err := tree.ForkLabels(d.Tree, i, tree.IDGen{R: s.Rand})
			if err != nil {
				return err
			}
			if len(labels) < s.Log.MaxBatch() {
				t := d.Tree
				ref = &writer.ForkRef{Parent: t.Header, Labels: labels,
					Of: session.ForkOf{Session: sid, EntryID: entryID, Seq: d.LastSeq, Pi11: pi11, Depth: d.ForkDepth() + 1}}
				// The path's lines (shared, immutable) and sequences,
				// should the parent go before the fork is stored: parsed
				// again only then.
				idx := t.PathIndices(i)
				lines := make([][]byte, len(idx))
				seqs := make([]uint64, len(idx))
				for k, j := range idx {
					lines[k], seqs[k] = t.Entry(int(j)).Raw, d.Seqs[j]
				}
				h := t.Header
				ref.Path = func() (*tree.Session, []uint64) {
					p := tree.NewSession(h)
					for _, l := range lines {
						if e, err := tree.ParseEntry(l); err == nil {
							p.Append(e)
						}
					}
					return p, seqs
				}
				return nil
			}
		}
		src = forkSource(d.Tree, entryID)
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	var id string
	var last uint64
	if ref != nil {
		id, last, err = writer.ForkByReference(ctx, s.Log, s.Forks, *ref, s.now(), s.Retry)
	} else {
		id, last, err = writer.Fork(ctx, s.Log, src, entryID, s.now(), s.Rand, s.Retry, pi11)
	}
	if err == nil {
		s.noteAck(id, last)
	}
	return id, last, err
}

// forkSource copies what a fork needs out of the Store (the path and the
// label entries), so publishing happens without holding the Store's lock.
func forkSource(t *tree.Session, leafID string) *tree.Session {
	out := tree.NewSession(t.Header)
	i, _ := t.Index(leafID)
	keep := map[int32]bool{}
	for _, k := range t.PathIndices(i) {
		keep[k] = true
	}
	for j := range t.Len() {
		if e := t.Entry(j); keep[int32(j)] || e.Kind == tree.KindLabel {
			out.Append(*e)
		}
	}
	return out
}
