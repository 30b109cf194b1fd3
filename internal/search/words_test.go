package search

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
)

// eachWordRef is the plain cut eachWord must equal: decode every rune,
// ask IsWordRune.
func eachWordRef(s string, fn func(a, b int)) {
	start := -1
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if IsWordRune(r) && !(r == utf8.RuneError && n == 1) {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			fn(start, i)
			start = -1
		}
		i += n
	}
	if start >= 0 {
		fn(start, len(s))
	}
}

// tokenizeRef is the tokenizer as it was: a token allocated per word.
func tokenizeRef(b []byte) analysis.TokenStream {
	var out analysis.TokenStream
	eachWordRef(string(b), func(i, j int) {
		out = append(out, &analysis.Token{Term: b[i:j], Position: len(out) + 1, Type: analysis.AlphaNumeric})
	})
	return out
}

// wordTexts are texts where a cut can go wrong: every script pi's users
// write in, digits of other scripts, private use, combining marks,
// invalid UTF-8, and random bytes.
func wordTexts() []string {
	texts := []string{
		"", " ", "a", "salt check", "auth.ts:40 verifySalt(ctx)", "foo_bar-baz/qux",
		"项目/后端 的 测试", "café naïve Ωμέγα русский текст", "٣٤٥ ๑๒๓ ²³ ½", "\ue000private\uf8ff",
		"e\u0301 combining", "emoji 😀 between", "\xff\xfe bad \xc3 utf-8 \xe2\x82", "tab\tnew\nline\r\n",
		strings.Repeat("long words ", 10000),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		texts = append(texts, string(b))
	}
	return texts
}

// TestEachWord: eachWord (ASCII by table) cuts every text as decoding
// every rune does, over strings and byte slices, from any offset; the
// tokenizer gives the same tokens as one allocating each.
func TestEachWord(t *testing.T) {
	for _, s := range wordTexts() {
		var want [][2]int
		eachWordRef(s, func(a, b int) { want = append(want, [2]int{a, b}) })
		var got, gotBytes [][2]int
		eachWord(s, 0, func(a, b int) bool { got = append(got, [2]int{a, b}); return true })
		eachWord([]byte(s), 0, func(a, b int) bool { gotBytes = append(gotBytes, [2]int{a, b}); return true })
		if !slices.Equal(got, want) || !slices.Equal(gotBytes, want) {
			t.Fatalf("%q: string %v, bytes %v, want %v", s, got, gotBytes, want)
		}
		toks, ref := (wordTokenizer{}).Tokenize([]byte(s)), tokenizeRef([]byte(s))
		if len(toks) != len(ref) {
			t.Fatalf("%q: %d tokens, want %d", s, len(toks), len(ref))
		}
		for i := range toks {
			if string(toks[i].Term) != string(ref[i].Term) || toks[i].Position != ref[i].Position || toks[i].Type != ref[i].Type {
				t.Fatalf("%q: token %d %+v, want %+v", s, i, *toks[i], *ref[i])
			}
		}
	}
}

// BenchmarkTokenize: the tokenizer against tokenizeRef, in one run, text
// by text (entries are a few hundred words).
func BenchmarkTokenize(b *testing.B) {
	texts := [][]byte{}
	size := 0
	for _, s := range wordTexts() {
		for len(s) > 0 {
			n := min(len(s), 2000)
			texts = append(texts, []byte(s[:n]))
			size += n
			s = s[n:]
		}
	}
	for _, bc := range []struct {
		name string
		fn   func([]byte) analysis.TokenStream
	}{{"decode-every-rune", tokenizeRef}, {"ascii-table", wordTokenizer{}.Tokenize}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				for _, t := range texts {
					bc.fn(t)
				}
			}
		})
	}
}
