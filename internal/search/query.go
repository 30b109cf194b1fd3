package search

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/pifleet/sessionlog/internal/session"
)

// Query is a parsed search (Parse): terms that must all match, and terms
// that must not.
type Query struct {
	terms []term
}

// term is one word, phrase, prefix or filter of a query.
type term struct {
	pos   int    // 1-based position in runes, for errors
	neg   bool   // -term: excluded
	field string // a filter's field; "" for text
	words []string
	// prefix: the last word is a prefix (text: auth*; role/type/tool/model: model:claude*)
	prefix bool
	value  string // a filter's value, as given (role, type, tool and model lowercased)
	// since/until: the bounds on the timestamp, normalized (timeKey).
	min, max string
	maxIncl  bool
}

// Filters are the filter fields of the query language.
var Filters = []string{"role", "type", "tool", "model", "label", "cwd", "name", "session", "since", "until"}

// SyntaxError is a query that cannot be parsed: where, 1-based in
// characters, and what was expected there.
type SyntaxError struct {
	Pos int
	Msg string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("position %d: %s", e.Pos, e.Msg) }

// Parse reads a query of the search language: whitespace-separated terms,
// all of which must match — word, "a phrase", prefix*, field:value or
// field:"a value" (Filters) — each negated by a leading -. A word that
// holds separators (foo.bar, it's) is the phrase of its words.
func Parse(q string) (*Query, error) {
	rs := []rune(q)
	out := &Query{}
	i := 0
	for {
		for i < len(rs) && unicode.IsSpace(rs[i]) {
			i++
		}
		if i >= len(rs) {
			break
		}
		t := term{pos: i + 1}
		if rs[i] == '-' {
			if i+1 >= len(rs) || unicode.IsSpace(rs[i+1]) {
				return nil, &SyntaxError{i + 1, `"-" must be followed by a word, a "phrase" or a filter, without a space`}
			}
			t.neg = true
			i++
		}
		start := i
		if rs[i] == '"' {
			text, next, err := quoted(rs, i)
			if err != nil {
				return nil, err
			}
			if t.words = Words(text); len(t.words) == 0 {
				return nil, &SyntaxError{start + 1, "the phrase has no word to search (words are letters and digits)"}
			}
			i = next
		} else {
			for i < len(rs) && !unicode.IsSpace(rs[i]) && rs[i] != '"' {
				if rs[i] == ':' && i > start && !(i+2 < len(rs) && rs[i+1] == '/' && rs[i+2] == '/') {
					break // a filter; a URL's scheme:// is text
				}
				i++
			}
			bare := string(rs[start:i])
			if i < len(rs) && rs[i] == ':' {
				f := strings.ToLower(bare)
				if !isFilter(f) {
					return nil, &SyntaxError{start + 1, fmt.Sprintf("unknown filter %q (filters: %s); put it in quotes to search for the text", bare+":", strings.Join(Filters, ": ")+":")}
				}
				i++
				vpos := i + 1
				var value string
				switch {
				case i < len(rs) && rs[i] == '"':
					text, next, err := quoted(rs, i)
					if err != nil {
						return nil, err
					}
					value, i = text, next
				default:
					s := i
					for i < len(rs) && !unicode.IsSpace(rs[i]) {
						i++
					}
					value = string(rs[s:i])
				}
				if value == "" {
					return nil, &SyntaxError{vpos, fmt.Sprintf("expected a value after %q", f+":")}
				}
				if err := t.filter(f, value, vpos); err != nil {
					return nil, err
				}
				out.terms = append(out.terms, t)
				continue
			}
			if i < len(rs) && rs[i] == '"' {
				return nil, &SyntaxError{i + 1, `expected a space before the "`}
			}
			if strings.HasSuffix(bare, "*") {
				w := Words(strings.TrimSuffix(bare, "*"))
				if len(w) != 1 || !IsWordRune(lastRune(strings.TrimSuffix(bare, "*"))) {
					return nil, &SyntaxError{start + 1, fmt.Sprintf("a prefix is one word followed by * (auth*), not %q", bare)}
				}
				t.words, t.prefix = w, true
			} else if t.words = Words(bare); len(t.words) == 0 {
				return nil, &SyntaxError{start + 1, fmt.Sprintf("%q has no word to search (words are letters and digits)", bare)}
			}
		}
		out.terms = append(out.terms, t)
	}
	if len(out.terms) == 0 {
		return nil, &SyntaxError{1, "expected a word, a \"phrase\" or a filter"}
	}
	return out, nil
}

// quoted reads the quoted text starting at rs[i] == '"' and returns it and
// where the term ends: a closing quote followed by a space or the end.
func quoted(rs []rune, i int) (string, int, error) {
	end := -1
	for j := i + 1; j < len(rs); j++ {
		if rs[j] == '"' {
			end = j
			break
		}
	}
	if end < 0 {
		return "", 0, &SyntaxError{i + 1, `the " opened here is not closed`}
	}
	if end+1 < len(rs) && !unicode.IsSpace(rs[end+1]) {
		return "", 0, &SyntaxError{end + 2, `expected a space after the closing "`}
	}
	return string(rs[i+1 : end]), end + 1, nil
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

func isFilter(f string) bool {
	for _, x := range Filters {
		if x == f {
			return true
		}
	}
	return false
}

// filter fills t as the filter f:value, value at position pos.
func (t *term) filter(f, value string, pos int) error {
	t.field = f
	bad := func(format string, args ...any) error {
		return &SyntaxError{pos, f + ": " + fmt.Sprintf(format, args...)}
	}
	switch f {
	case "role", "type", "tool", "model":
		if strings.HasSuffix(value, "*") {
			value, t.prefix = strings.TrimSuffix(value, "*"), true
			if value == "" {
				return bad("a prefix needs something before the *")
			}
		}
		t.value = lower(value)
	case "cwd":
		if !strings.HasPrefix(value, "/") {
			return bad("expected an absolute path (/home/me/project), not %q", value)
		}
		t.value = path.Clean(value)
	case "session":
		if err := session.ValidSessionID(value); err != nil {
			return bad("expected a session id (a UUID), not %q", value)
		}
		t.value = value
	case "since", "until":
		tm, date, err := parseTime(value)
		if err != nil {
			return bad("expected a time (RFC 3339: 2026-12-01T10:00:00Z) or a date (2026-12-01), not %q", value)
		}
		if f == "since" {
			t.min = timeKey(tm)
		} else if date {
			t.max = timeKey(tm.AddDate(0, 0, 1)) // the whole day
		} else {
			t.max, t.maxIncl = timeKey(tm), true
		}
		t.value = value
	default: // name, label
		t.value = value
	}
	return nil
}

func parseTime(s string) (time.Time, bool, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, true, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, false, err
}

// timeKey is a timestamp as the index holds it: UTC, milliseconds, so that
// keys sort as times.
func timeKey(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// Resolver answers the filters the index cannot, from what a shard's Store
// holds now: a session's name changes, a label moves.
type Resolver interface {
	// SessionsNamed returns the sessions whose name contains s,
	// case-insensitively.
	SessionsNamed(s string) []string
	// Labelled returns the entries carrying label l, as DocIDs.
	Labelled(l string) []string
	// Text returns the text the index holds of an entry (Extract's), as
	// the Store holds it now; false when the entry is not shown.
	Text(ctx context.Context, session, entry string) (string, bool)
}

// bleveQuery is q over one shard's index; cwdPrefix, when set, confines it
// to sessions under that directory (a tenant).
func (q *Query) bleveQuery(r Resolver, cwdPrefix string) query.Query {
	var must, not []query.Query
	for i := range q.terms {
		t := &q.terms[i]
		if t.neg && t.phrase() {
			continue // the index cannot tell (no positions): checked against the text
		}
		c := t.bleve(r)
		if t.neg {
			not = append(not, c)
		} else {
			must = append(must, c)
		}
	}
	if cwdPrefix != "" {
		must = append(must, cwdQuery(path.Clean(cwdPrefix)))
	}
	if len(must) == 0 {
		must = append(must, query.NewMatchAllQuery())
	}
	return query.NewBooleanQuery(must, nil, not)
}

func (t *term) bleve(r Resolver) query.Query {
	switch t.field {
	case "":
		switch {
		case t.prefix:
			return fieldQ(query.NewPrefixQuery(t.words[0]), fText)
		case len(t.words) == 1:
			return fieldQ(query.NewTermQuery(t.words[0]), fText)
		default:
			// The entries holding every word of the phrase; the index
			// keeps no positions (mapping.go), so Search checks each
			// against its text.
			var qs []query.Query
			for _, w := range slices.Compact(slices.Sorted(slices.Values(t.words))) {
				qs = append(qs, fieldQ(query.NewTermQuery(w), fText))
			}
			return query.NewConjunctionQuery(qs)
		}
	case "role", "type", "tool", "model":
		if t.prefix {
			return fieldQ(query.NewPrefixQuery(t.value), t.field)
		}
		return fieldQ(query.NewTermQuery(t.value), t.field)
	case "cwd":
		return cwdQuery(t.value)
	case "session":
		return fieldQ(query.NewTermQuery(t.value), fSession)
	case "since", "until":
		var lo, hi *string
		if t.min != "" {
			lo = &t.min
		}
		if t.max != "" {
			hi = &t.max
		}
		yes := true
		tq := query.NewTermRangeInclusiveQuery(deref(lo), deref(hi), &yes, &t.maxIncl)
		tq.SetField(fTimestamp)
		return tq
	case "name":
		ids := r.SessionsNamed(t.value)
		if len(ids) == 0 {
			return query.NewMatchNoneQuery()
		}
		qs := make([]query.Query, len(ids))
		for i, id := range ids {
			qs[i] = fieldQ(query.NewTermQuery(id), fSession)
		}
		return query.NewDisjunctionQuery(qs)
	case "label":
		ids := r.Labelled(t.value)
		if len(ids) == 0 {
			return query.NewMatchNoneQuery()
		}
		return query.NewDocIDQuery(ids)
	}
	return query.NewMatchNoneQuery()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// cwdQuery matches the sessions whose cwd is dir or under it, directory by
// directory (store.CwdUnder): the index holds each cwd's directories
// (cwdDirs).
func cwdQuery(dir string) query.Query {
	return fieldQ(query.NewTermQuery(dir), fCwd)
}

type fielded interface {
	query.Query
	SetField(string)
}

func fieldQ[Q fielded](q Q, f string) Q {
	q.SetField(f)
	return q
}

// phrase reports whether t is a phrase: more than one word of text.
func (t *term) phrase() bool { return t.field == "" && !t.prefix && len(t.words) > 1 }

// checked reports whether q has a phrase, which the index answers only in
// part: its hits are checked against their text (matchText).
func (q *Query) checked() bool {
	return slices.ContainsFunc(q.terms, func(t term) bool { return t.phrase() })
}

// matchText reports whether text, an entry's, satisfies q's phrases: each
// one's words in a row, or not for an excluded one.
func (q *Query) matchText(text string) bool {
	for i := range q.terms {
		t := &q.terms[i]
		if t.phrase() && hasPhrase(text, t.words) == t.neg {
			return false
		}
	}
	return true
}

// hasPhrase reports whether text holds words (lowercased) in a row, as the
// index cuts text — without building its list of words: a candidate can
// be a tool result of megabytes.
func hasPhrase(text string, words []string) bool {
	if len(words) > 64 {
		return hasRun(Words(text), words)
	}
	var at uint64 // bit k: the words read last are words[:k]
	found := false
	eachWord(text, 0, func(i, j int) bool {
		w := text[i:j]
		next := uint64(0)
		for k, m := 0, at|1; m != 0; k, m = k+1, m>>1 {
			if m&1 != 0 && sameWord(w, words[k]) {
				if k+1 == len(words) {
					found = true
					return false
				}
				next |= 1 << (k + 1)
			}
		}
		at = next
		return true
	})
	return found
}

// sameWord reports whether w, a word of text, lowercases to the word l.
func sameWord(w, l string) bool {
	if !isASCII(w) {
		return lower(w) == l
	}
	if len(w) != len(l) {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != l[i] {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// hasRun reports whether run occurs in words, consecutively.
func hasRun(words, run []string) bool {
	for i := 0; i+len(run) <= len(words); i++ {
		if words[i] == run[0] && slices.Equal(words[i+1:i+len(run)], run[1:]) {
			return true
		}
	}
	return false
}

// marks returns what a snippet marks: the words of the text terms that must
// match, and their prefixes.
func (q *Query) marks() (words map[string]bool, prefixes []string) {
	words = map[string]bool{}
	for _, t := range q.terms {
		if t.neg || t.field != "" {
			continue
		}
		if t.prefix {
			prefixes = append(prefixes, t.words[0])
			continue
		}
		for _, w := range t.words {
			words[w] = true
		}
	}
	return words, prefixes
}
