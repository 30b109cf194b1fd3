package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pifleet/sessionlog/internal/search/searchcorpus"
)

// corpusManifest is the file in the search scenario's dir that says which
// corpus its sessions folder holds.
const corpusManifest = "search-corpus.json"

type corpusFile struct {
	Seed    uint64              `json:"seed"`
	Entries int                 `json:"entries"`
	Corpus  searchcorpus.Corpus `json:"corpus"`
}

// SearchCorpus returns the corpus of generated pi session files
// (searchcorpus.Generate) of entries entries and seed under dir/sessions,
// generating it unless dir holds it already, and whether it was reused.
func SearchCorpus(dir string, seed uint64, entries int) (searchcorpus.Corpus, bool, error) {
	path := filepath.Join(dir, corpusManifest)
	if b, err := os.ReadFile(path); err == nil {
		var m corpusFile
		if json.Unmarshal(b, &m) == nil && m.Seed == seed && m.Entries == entries && len(m.Corpus.Files) > 0 {
			return m.Corpus, true, nil
		}
	}
	sessions := filepath.Join(dir, "sessions")
	if err := os.RemoveAll(sessions); err != nil {
		return searchcorpus.Corpus{}, false, err
	}
	c, err := searchcorpus.Generate(sessions, seed, entries)
	if err != nil {
		return c, false, fmt.Errorf("generate the corpus: %w", err)
	}
	b, err := json.Marshal(corpusFile{Seed: seed, Entries: entries, Corpus: c})
	if err != nil {
		return c, false, err
	}
	return c, false, os.WriteFile(path, b, 0o644)
}
