package searchcorpus

import (
	"encoding/json"
	"fmt"

	"github.com/pifleet/sessionlog/internal/search"
)

// Load reads a corpus's files into Docs as a node would index them: each
// entry with its session's id, cwd, latest name, and whether it is on the
// default path (root to the last entry).
func Load(c Corpus) ([]search.Doc, error) {
	docs := make([]search.Doc, 0, c.Entries)
	for _, f := range c.Files {
		var err error
		if docs, err = loadFile(f, docs); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return docs, nil
}

func loadFile(file string, docs []search.Doc) ([]search.Doc, error) {
	var sid, cwd, name, last string
	parents := map[string]string{}
	first := len(docs)
	err := Lines(file, func(b []byte) error {
		var h struct {
			Type     string  `json:"type"`
			ID       string  `json:"id"`
			ParentID *string `json:"parentId"`
			Cwd      string  `json:"cwd"`
		}
		if err := json.Unmarshal(b, &h); err != nil {
			return err
		}
		if h.Type == "session" {
			sid, cwd = h.ID, h.Cwd
			return nil
		}
		last = h.ID
		if h.ParentID != nil {
			parents[h.ID] = *h.ParentID
		}
		if d, ok := search.Extract(b); ok {
			if d.Type == "session_info" {
				name = d.Name
			}
			docs = append(docs, d)
		}
		return nil
	})
	if err != nil {
		return docs, err
	}
	path := map[string]bool{}
	for id := last; id != ""; id = parents[id] {
		path[id] = true
	}
	for i := first; i < len(docs); i++ {
		d := &docs[i]
		d.Session, d.Cwd, d.Name, d.OnPath = sid, cwd, name, path[d.Entry]
	}
	return docs, nil
}
