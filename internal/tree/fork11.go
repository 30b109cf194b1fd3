package tree

import (
	"fmt"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// Fork11 is pi 1.1.0's createBranchedSession: as Fork, but the path is
// re-chained over the label entries it drops, so no entry is left an
// orphan: each kept entry's parentId is the kept entry before it (null for
// the first), and a compaction whose firstKeptEntryId is a dropped label
// points at the next kept entry instead. An entry that keeps its parent
// keeps its bytes; one that changes is written again as JSON.stringify
// writes it, with the same keys in the same order.
func Fork11(src *Session, leaf int, h Header, ids IDGen) (*Session, error) {
	out, err := forkPath11(src, leaf, h)
	if err != nil {
		return nil, err
	}
	return out, forkLabels(src, out, ids)
}

func forkPath11(src *Session, leaf int, h Header) (*Session, error) {
	if leaf < 0 || leaf >= src.Len() {
		return nil, fmt.Errorf("fork: no entry at index %d", leaf)
	}
	path := src.PathIndices(leaf)
	// next holds, for each dropped label, the kept entry after it.
	next := map[string]string{}
	var dropped []string
	for _, i := range path {
		if e := &src.entries[i]; e.Kind == KindLabel {
			dropped = append(dropped, e.ID)
		} else {
			for _, id := range dropped {
				next[id] = e.ID
			}
			dropped = dropped[:0]
		}
	}
	out := NewSession(h)
	out.Grow(len(path))
	parent := ""
	for _, i := range path {
		e := src.entries[i]
		if e.Kind == KindLabel {
			continue
		}
		kept, moved := "", false
		if e.Kind == KindCompaction {
			kept, _ = e.str(fCFirstKept)
			_, moved = next[kept]
		}
		if e.ParentID != parent || moved {
			v, err := jsjson.ParseValue(e.Raw)
			if err != nil {
				return nil, fmt.Errorf("fork: entry %s: %w", e.ID, err)
			}
			p := Value{Kind: KindNull}
			if parent != "" {
				p = Value{Kind: KindString, Str: parent}
			}
			v.Set("parentId", p)
			if moved {
				v.Set("firstKeptEntryId", Value{Kind: KindString, Str: next[kept]})
			}
			id := e.ID
			if e, err = ParseEntry(v.AppendJSON(nil)); err != nil {
				return nil, fmt.Errorf("fork: entry %s: %w", id, err)
			}
		}
		out.Append(e)
		parent = e.ID
	}
	return out, nil
}
