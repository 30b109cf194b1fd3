package search

import (
	"unicode"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	keywordtok "github.com/blevesearch/bleve/v2/analysis/tokenizer/single"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/registry"
)

// Index fields. The text is analysed (words, lowercased; no positions:
// see wordTokenizer); the filters are keywords. Nothing is stored but the id:
// the Store holds every entry's JSON, hits are decorated from there.
const (
	fText      = "text"
	fSession   = "session"
	fType      = "type"
	fRole      = "role"
	fTool      = "tool"
	fModel     = "model"
	fTimestamp = "timestamp"
	fCwd       = "cwd"
)

// mappingVersion names the mapping below: an index built by another is
// rebuilt from the log. 3: the text has no term vectors; 4: cwd holds the
// cwd's directories; 5: the internal records keep no cwd (an erased
// session's must not stay in root.bolt).
const mappingVersion = "5"

const (
	tokenizerName = "piwords"
	analyzerText  = "pitext"
	analyzerLower = "pilower"
)

func init() {
	// Registered once per process; bleve's registry is global.
	_ = registry.RegisterTokenizer(tokenizerName, func(map[string]any, *registry.Cache) (analysis.Tokenizer, error) {
		return wordTokenizer{}, nil
	})
}

// IsWordRune is what a word is made of: letters, digits and private-use
// characters, as SQLite FTS5's unicode61 tokenizer cuts text. Everything
// else separates words.
func IsWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// wordTokenizer cuts text into runs of word runes: the same cut as Words,
// without a regexp (it runs over every byte indexed).
//
// The index keeps no term vectors of the text: no position or offset of
// any occurrence of a word, only which entries hold it and how often.
// They were most of the index (at a million generated entries, 1.10× the
// JSON with them, 0.34× without; docs/BENCHMARKS.md, "Search (pi-bench
// search)"), and only phrases read them: a phrase is answered as the
// entries holding all its words, each checked against its text
// (Index.Search), and snippets cut the Store's text themselves
// (eachWord), not bleve's highlighter.
type wordTokenizer struct{}

func (wordTokenizer) Tokenize(b []byte) analysis.TokenStream {
	// Tokens come from slabs, not an allocation each (nor one array grown
	// by copying: a token is 80 bytes).
	var out analysis.TokenStream
	var slab []analysis.Token
	eachWord(b, 0, func(i, j int) bool {
		if len(slab) == cap(slab) {
			// Sized by what is left of the text (a word and its
			// separator are 6 bytes or more in most text).
			slab = make([]analysis.Token, 0, min(tokenSlab, 1+(len(b)-i)/6))
		}
		slab = append(slab, analysis.Token{Term: b[i:j], Position: len(out) + 1, Type: analysis.AlphaNumeric})
		out = append(out, &slab[len(slab)-1])
		return true
	})
	return out
}

// tokenSlab bounds the tokens allocated at once.
const tokenSlab = 256

// Words returns the lowercased words of s, as the index cuts text.
func Words(s string) []string {
	var out []string
	for _, t := range (wordTokenizer{}).Tokenize([]byte(s)) {
		out = append(out, lower(string(t.Term)))
	}
	return out
}

// lower is the index's lowercasing (bleve's lowercase filter: unicode.ToLower
// rune by rune).
func lower(s string) string {
	b := []byte(s)
	return string(lowercase.NewLowerCaseFilter().Filter(analysis.TokenStream{{Term: b}})[0].Term)
}

// newMapping is the index's mapping: one document type, the fields above.
func newMapping() (*mapping.IndexMappingImpl, error) {
	m := bleve.NewIndexMapping()
	if err := m.AddCustomAnalyzer(analyzerText, map[string]any{"type": custom.Name, "tokenizer": tokenizerName,
		"token_filters": []string{lowercase.Name}}); err != nil {
		return nil, err
	}
	if err := m.AddCustomAnalyzer(analyzerLower, map[string]any{"type": custom.Name, "tokenizer": keywordtok.Name,
		"token_filters": []string{lowercase.Name}}); err != nil {
		return nil, err
	}
	text := bleve.NewTextFieldMapping()
	text.Analyzer, text.Store, text.IncludeInAll, text.IncludeTermVectors, text.DocValues = analyzerText, false, false, false, false
	field := func(analyzer string) *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Analyzer, f.Store, f.IncludeInAll, f.IncludeTermVectors, f.DocValues = analyzer, false, false, false, false
		return f
	}
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(fText, text)
	for _, f := range []string{fSession, fTimestamp, fCwd} {
		dm.AddFieldMappingsAt(f, field(keyword.Name))
	}
	for _, f := range []string{fType, fRole, fTool, fModel} {
		dm.AddFieldMappingsAt(f, field(analyzerLower))
	}
	m.DefaultMapping = dm
	m.DefaultAnalyzer = analyzerText
	m.DefaultField = fText
	m.StoreDynamic, m.IndexDynamic, m.DocValuesDynamic = false, false, false
	m.ScoringModel = "bm25"
	return m, nil
}
