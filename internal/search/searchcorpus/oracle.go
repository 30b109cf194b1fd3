package searchcorpus

import (
	"regexp"
	"slices"
	"strings"

	"github.com/pifleet/sessionlog/internal/search"
)

// TokenPattern is a token of every engine in the comparison: a run of
// letters, digits and private-use characters, as SQLite FTS5's unicode61
// tokenizer cuts text (its default categories L* N* Co). bleve's analyzer
// is given the same pattern, so that hits can be compared.
const TokenPattern = `[\p{L}\p{N}\p{Co}]+`

var token = regexp.MustCompile(TokenPattern)

// Tokens returns the lowercased tokens of s.
func Tokens(s string) []string {
	ts := token.FindAllString(s, -1)
	for i, t := range ts {
		ts[i] = strings.ToLower(t)
	}
	return ts
}

// Query is one search in the forms of issue 35: every word (AND), a
// phrase, a prefix, and equality filters.
type Query struct {
	Label  string   // what the query is, for tables
	Words  []string // every one must occur
	Phrase []string // these tokens in a row
	Prefix string   // a token starting so
	Role   string
	Cwd    string
}

// Queries are the queries the benchmark times and the engines are checked
// on: one word, three words, a phrase, a prefix, a filtered word.
var Queries = []Query{
	{Label: "one word: salt", Words: []string{"salt"}},
	{Label: "three words: token expired clock", Words: []string{"token", "expired", "clock"}},
	{Label: `phrase: "salt check"`, Phrase: []string{"salt", "check"}},
	{Label: "prefix: auth*", Prefix: "auth"},
	{Label: "filtered: deadlock role:assistant cwd:/home/dev/sessionlog", Words: []string{"deadlock"}, Role: "assistant", Cwd: "/home/dev/sessionlog"},
}

// Match reports whether d answers q.
func (q Query) Match(d *search.Doc) bool {
	if q.Role != "" && d.Role != q.Role || q.Cwd != "" && d.Cwd != q.Cwd {
		return false
	}
	ts := Tokens(d.Text)
	for _, w := range q.Words {
		if !slices.Contains(ts, w) {
			return false
		}
	}
	if q.Prefix != "" && !slices.ContainsFunc(ts, func(t string) bool { return strings.HasPrefix(t, q.Prefix) }) {
		return false
	}
	if len(q.Phrase) > 0 {
		found := false
		for i := 0; i+len(q.Phrase) <= len(ts) && !found; i++ {
			found = slices.Equal(ts[i:i+len(q.Phrase)], q.Phrase)
		}
		if !found {
			return false
		}
	}
	return true
}

// Key names a hit: its session and entry.
func Key(d *search.Doc) string { return d.Session + "/" + d.Entry }

// Oracle returns the keys of the docs that answer q, sorted: the
// brute-force scan every engine's hit set must equal.
func Oracle(docs []search.Doc, q Query) []string {
	var keys []string
	for i := range docs {
		if q.Match(&docs[i]) {
			keys = append(keys, Key(&docs[i]))
		}
	}
	slices.Sort(keys)
	return keys
}
