package search

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pifleet/sessionlog/internal/wire"
)

// Snippet sizes, in characters: the context kept before the first match
// and the whole snippet.
const (
	snippetBefore = 60
	snippetLen    = 240
)

// Snippet is the part of text around the first word q matches, with
// every matched word marked; whitespace runs become one space. Without a
// match (a filter-only query) it is the text's beginning.
func (q *Query) Snippet(text string) []wire.SnippetPart {
	words, prefixes := q.marks()
	match := func(w string) bool {
		w = lower(w)
		if words[w] {
			return true
		}
		for _, p := range prefixes {
			if strings.HasPrefix(w, p) {
				return true
			}
		}
		return false
	}
	// Words are cut one at a time, and only as far as needed: a hit's
	// text can be a tool result of megabytes.
	first := -1
	eachWord(text, 0, func(a, b int) bool {
		if match(text[a:b]) {
			first = a
			return false
		}
		return true
	})
	start := 0
	if first > 0 {
		start = back(text, first, snippetBefore)
	}
	end := forward(text, start, snippetLen)
	var parts []wire.SnippetPart
	add := func(s string, m bool) {
		if s == "" {
			return
		}
		if n := len(parts); n > 0 && parts[n-1].Match == m {
			parts[n-1].Text += s
			return
		}
		parts = append(parts, wire.SnippetPart{Text: s, Match: m})
	}
	if start > 0 {
		add("…", false)
	}
	at := start
	eachWord(text, start, func(a, b int) bool {
		if b > end {
			return false
		}
		if match(text[a:b]) {
			add(squeeze(text[at:a]), false)
			add(text[a:b], true)
			at = b
		}
		return true
	})
	add(squeeze(text[at:end]), false)
	if end < len(text) {
		add("…", false)
	}
	if len(parts) > 0 && !parts[0].Match {
		parts[0].Text = strings.TrimLeftFunc(parts[0].Text, unicode.IsSpace)
	}
	if parts == nil {
		parts = []wire.SnippetPart{}
	}
	return parts
}

// eachWord calls fn with the byte span of each word of s from offset
// from on (cut as the index cuts them), until fn returns false. It runs
// over every byte indexed: an ASCII byte costs a table lookup (wordByte),
// and only other runes are decoded and looked up in unicode's tables.
func eachWord[T ~string | ~[]byte](s T, from int, fn func(a, b int) bool) {
	start := -1
	for i := from; i < len(s); {
		word, n := wordByte[s[i]&0x7f], 1
		if s[i] >= utf8.RuneSelf {
			var r rune
			r, n = decodeRune(s[i:])
			word = IsWordRune(r) && !(r == utf8.RuneError && n == 1)
		}
		if word {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			if !fn(start, i) {
				return
			}
			start = -1
		}
		i += n
	}
	if start >= 0 {
		fn(start, len(s))
	}
}

// wordByte holds IsWordRune's answer for each ASCII byte.
var wordByte = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = IsWordRune(rune(c))
	}
	return t
}()

// decodeRune is utf8.DecodeRune of a string or a byte slice, copying at
// most utf8.UTFMax bytes (no allocation).
func decodeRune[T ~string | ~[]byte](s T) (rune, int) {
	var b [utf8.UTFMax]byte
	n := copy(b[:], s[:min(len(s), utf8.UTFMax)])
	return utf8.DecodeRune(b[:n])
}

// back returns the byte offset n characters before i, moved forward to a
// word's start so the snippet does not begin mid-word.
func back(s string, i, n int) int {
	j := i
	for ; n > 0 && j > 0; n-- {
		_, w := utf8.DecodeLastRuneInString(s[:j])
		j -= w
	}
	if j == 0 {
		return 0
	}
	for j < i {
		r, w := utf8.DecodeRuneInString(s[j:])
		j += w
		if unicode.IsSpace(r) {
			break
		}
	}
	return j
}

// forward returns the byte offset n characters after i.
func forward(s string, i, n int) int {
	for ; n > 0 && i < len(s); n-- {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return i
}

// squeeze turns each run of whitespace into one space.
func squeeze(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) && r != ' ' }) && !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
