package search

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestParseErrors: a query that cannot be read names the position (in
// characters, from 1) and what was expected there.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		q    string
		pos  int
		want string
	}{
		{"", 1, "expected a word"},
		{"   ", 1, "expected a word"},
		{`salt "open phrase`, 6, "not closed"},
		{`"salt"check`, 7, "space after the closing"},
		{`salt- - x`, 7, `"-" must be followed`},
		{`salt -`, 6, `"-" must be followed`},
		{`rol:user`, 1, `unknown filter "rol:"`},
		{`héllo wörld:x`, 7, `unknown filter "wörld:"`},
		{`role:`, 6, `expected a value after "role:"`},
		{`role: user`, 6, `expected a value after "role:"`},
		{`role:""`, 6, `expected a value after "role:"`},
		{`model:*`, 7, "a prefix needs something"},
		{`cwd:home/dev`, 5, "expected an absolute path"},
		{`session:abc`, 9, "expected a session id"},
		{`since:yesterday`, 7, "expected a time (RFC 3339"},
		{`x until:2026-13-01`, 9, "expected a time"},
		{`*`, 1, "a prefix is one word followed by *"},
		{`foo.bar*`, 1, "a prefix is one word followed by *"},
		{`auth**`, 1, "a prefix is one word followed by *"},
		{`!!!`, 1, `"!!!" has no word to search`},
		{`"?!"`, 1, "the phrase has no word"},
		{`salt"x"`, 5, `expected a space before the "`},
		{`日本 "语`, 4, "not closed"},
	} {
		_, err := Parse(c.q)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: %v, want a SyntaxError", c.q, err)
			continue
		}
		if se.Pos != c.pos || !strings.Contains(se.Msg, c.want) {
			t.Errorf("%q: position %d %q, want position %d with %q", c.q, se.Pos, se.Msg, c.pos, c.want)
		}
		if !strings.HasPrefix(err.Error(), "position ") {
			t.Errorf("%q: %q does not start with its position", c.q, err)
		}
	}
}

// TestParseForms: what each form of the language becomes.
func TestParseForms(t *testing.T) {
	for _, c := range []struct {
		q    string
		want string // the terms, as form()
	}{
		{"Salt CHECK", "text[salt] text[check]"},
		{`"Salt  check"`, "text[salt check]"},
		{"foo.bar it's", "text[foo bar] text[it s]"},
		{"auth* -Tok*", "prefix[auth] -prefix[tok]"},
		{`-"a b" -x`, "-text[a b] -text[x]"},
		{"role:ToolResult type:compaction tool:bash model:claude*", "role=toolresult type=compaction tool=bash model=claude*"},
		{`name:"My Session" label:salt-fix`, "name=My Session label=salt-fix"},
		{"cwd:/home/dev/../ops/", "cwd=/home/ops"},
		{"ROLE:user", "role=user"},
		{"since:2026-12-01 until:2026-12-01", "since=[2026-12-01T00:00:00.000Z,) until=[,2026-12-02T00:00:00.000Z)"},
		{"until:2026-12-01T10:00:00+01:00", "until=[,2026-12-01T09:00:00.000Z]"},
		{"日本語のテスト 為什麼", "text[日本語のテスト] text[為什麼]"},
		{"http://x.org/a", "text[http x org a]"},
	} {
		q, err := Parse(c.q)
		if err != nil {
			t.Errorf("%q: %v", c.q, err)
			continue
		}
		if got := q.form(); got != c.want {
			t.Errorf("%q: %s, want %s", c.q, got, c.want)
		}
	}
}

// form is the terms of q as TestParseForms writes them.
func (q *Query) form() string {
	var parts []string
	for _, t := range q.terms {
		var s string
		switch {
		case t.field == "" && t.prefix:
			s = "prefix[" + t.words[0] + "]"
		case t.field == "":
			s = "text[" + strings.Join(t.words, " ") + "]"
		case t.field == "since" || t.field == "until":
			s = t.field + "=[" + t.min + "," + t.max
			if t.maxIncl {
				s += "]"
			} else {
				s += ")"
			}
		default:
			s = t.field + "=" + t.value
			if t.prefix {
				s += "*"
			}
		}
		if t.neg {
			s = "-" + s
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// TestHasPhrase: the phrase check streaming over a text agrees with the
// run of its words as the index cuts them, on random texts of mixed case,
// unicode (whose lowercase differs in length), separators and repeated
// words (a phrase that starts again inside itself).
func TestHasPhrase(t *testing.T) {
	vocab := []string{"a", "A", "b", "B", "salt", "SALT", "Salt", "check", "straße", "STRASSE", "İstanbul", "ǅ", "ǆ", "Ⅻ", "σ", "Σ", "ς", "x1", "会话"}
	seps := []string{" ", "  ", ".", "\n", "-", "_", " , ", "\uFFFD", "\xff", "🚀"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(vocab[r.IntN(len(vocab))])
			b.WriteString(seps[r.IntN(len(seps))])
		}
		var p []string
		for range 1 + r.IntN(3) {
			p = append(p, vocab[r.IntN(len(vocab))])
		}
		words := Words(strings.Join(p, " "))
		text := b.String()
		if got, want := hasPhrase(text, words), hasRun(Words(text), words); got != want {
			t.Fatalf("%q in %q: %v, the words' run says %v", words, text, got, want)
		}
	}
	if !hasPhrase("a a a b", []string{"a", "a", "b"}) {
		t.Fatal(`"a a b" not found in "a a a b"`)
	}
}
