package search

import (
	"encoding/json"
	"path"
	"slices"
	"strings"
	"time"
)

// MatchDoc is the brute-force answer to q for one doc: every term checked
// against the doc's words and fields one by one, with no index. named and
// labelled are the answers of name: and label: (sessions; DocIDs).
// words are Words(d.Text), which the caller keeps across queries.
func (q *Query) MatchDoc(d *Doc, words []string, named func(string) map[string]bool, labelled func(string) map[string]bool) bool {
	for _, t := range q.terms {
		if t.matchDoc(d, words, named, labelled) == t.neg {
			return false
		}
	}
	return true
}

func (t *term) matchDoc(d *Doc, words []string, named, labelled func(string) map[string]bool) bool {
	eq := func(v string) bool {
		v = lower(v)
		if t.prefix {
			return strings.HasPrefix(v, t.value)
		}
		return v == t.value
	}
	switch t.field {
	case "":
		switch {
		case t.prefix:
			return slices.ContainsFunc(words, func(w string) bool { return strings.HasPrefix(w, t.words[0]) })
		default:
			for i := 0; i+len(t.words) <= len(words); i++ {
				if slices.Equal(words[i:i+len(t.words)], t.words) {
					return true
				}
			}
			return false
		}
	case "role":
		return d.Role != "" && eq(d.Role)
	case "type":
		return eq(d.Type)
	case "model":
		return d.Model != "" && eq(d.Model)
	case "tool":
		return slices.ContainsFunc(d.Tools, func(s string) bool { return s != "" && eq(s) })
	case "cwd":
		c := d.Cwd
		if !strings.HasPrefix(c, "/") {
			return false
		}
		c = path.Clean(c)
		return t.value == "/" || c == t.value || strings.HasPrefix(c, t.value+"/")
	case "session":
		return d.Session == t.value
	case "since", "until":
		ts, err := time.Parse(time.RFC3339Nano, d.Timestamp)
		if err != nil {
			return false
		}
		k := timeKey(ts)
		if t.min != "" && k < t.min {
			return false
		}
		if t.max != "" && (k > t.max || k == t.max && !t.maxIncl) {
			return false
		}
		return true
	case "name":
		return named(t.value)[d.Session]
	case "label":
		return labelled(t.value)[DocID(d.Session, d.Entry)]
	}
	return false
}

// SetFirstWindow makes first pages look at n hits by score, until the
// returned func restores it.
func SetFirstWindow(n int) func() {
	was := firstWindow
	firstWindow = n
	return func() { firstWindow = was }
}

// Checked reports whether q's hits are checked against their text.
func (q *Query) Checked() bool { return q.checked() }

// SetCheckBudget makes pages check n entries against their text, until
// the returned func restores it.
func SetCheckBudget(n int) func() {
	was := CheckBudget
	CheckBudget = n
	return func() { CheckBudget = was }
}

// Terms is every term of field in the index's dictionaries: the terms of
// deleted documents too, until a merge drops them.
func (x *Index) Terms(field string) ([]string, error) {
	d, err := x.index().FieldDict(field)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var out []string
	for {
		e, err := d.Next()
		if err != nil {
			return nil, err
		}
		if e == nil {
			return out, nil
		}
		out = append(out, e.Term)
	}
}

// ExtractStd is Extract with encoding/json's decoder, for
// TestExtractDecoders.
func ExtractStd(b []byte) (Doc, bool) { return extract(b, json.Unmarshal) }
