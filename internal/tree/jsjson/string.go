package jsjson

import "unicode/utf8"

// This file holds the string half of the JavaScript JSON emulation.
//
// JavaScript strings are sequences of UTF-16 code units and may contain
// unpaired surrogates, which Go's UTF-8 strings cannot represent. We store
// them as WTF-8 (https://simonsapin.github.io/wtf-8/): plain UTF-8, except
// that a lone surrogate U+D800–U+DFFF is written in its 3-byte generalized
// UTF-8 form ED A0..BF 80..BF. A surrogate pair is never stored as two such
// sequences; it is always the real 4-byte UTF-8 of the supplementary code
// point, so byte equality of WTF-8 strings is equality of JS strings.

// jsAppendSurrogate appends the WTF-8 form of the surrogate code unit u
// (0xD800 ≤ u ≤ 0xDFFF). utf8.AppendRune refuses surrogates, hence this.
func jsAppendSurrogate(dst []byte, u rune) []byte {
	return append(dst, 0xED, byte(0x80|(u>>6)&0x3F), byte(0x80|u&0x3F))
}

// jsSurrogateAt reports the surrogate code unit whose WTF-8 form starts at
// s[i], if any.
func jsSurrogateAt(s string, i int) (rune, bool) {
	if i+2 < len(s) && s[i] == 0xED && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2] >= 0x80 && s[i+2] <= 0xBF {
		return 0xD000 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), true
	}
	return 0, false
}

// jsInvalidUTF8Len returns how many bytes of b (non-empty, not starting a
// valid UTF-8 sequence) one U+FFFD replaces: the "maximal subpart" of the
// WHATWG Encoding Standard, which is what node's Buffer#toString('utf8') and
// TextDecoder use when a session file is read. E2 82 41 thus becomes
// U+FFFD 'A' (not two U+FFFD as a byte-wise Go range loop would give), and an
// encoded surrogate ED A0 80 becomes three U+FFFD because A0 is not a valid
// second byte after ED in strict UTF-8.
func jsInvalidUTF8Len[T string | []byte](b T) int {
	lo, hi := byte(0x80), byte(0xBF)
	var need int
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}

const jsHex = "0123456789abcdef"

// jsStrSafe[c] is true for the ASCII bytes JSON.stringify copies verbatim.
var jsStrSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends the JSON.stringify quoting of the WTF-8 string s:
// '"' and '\\' are escaped; U+0008, U+000C, U+000A, U+000D and U+0009 become
// \b \f \n \r \t; other code points below U+0020 become \u00xx; lone
// surrogates become \udxxx (lower-case hex, the ES2019 well-formed
// JSON.stringify); everything else, including U+007F, U+2028, U+2029 and
// supplementary characters, is copied raw.
//
// s should be valid WTF-8. Two adjacent WTF-8 surrogates forming a pair are
// written as the paired character, since that is what the same code units
// mean in JavaScript. Bytes that are not WTF-8 at all cannot come from a JS
// string; each maximal invalid subpart is written as U+FFFD, so the output is
// always valid UTF-8.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0 // s[start:i] is pending verbatim output
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsStrSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', jsHex[c>>4], jsHex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || size != 1 {
			i += size // valid UTF-8, including a literal U+FFFD
			continue
		}
		dst = append(dst, s[start:i]...)
		if u, ok := jsSurrogateAt(s, i); ok {
			if u < 0xDC00 {
				if l, ok := jsSurrogateAt(s, i+3); ok && l >= 0xDC00 {
					dst = utf8.AppendRune(dst, 0x10000+(u-0xD800)<<10+(l-0xDC00))
					i += 6
					start = i
					continue
				}
			}
			dst = append(dst, '\\', 'u', 'd', jsHex[u>>8&0xF], jsHex[u>>4&0xF], jsHex[u&0xF])
			i += 3
		} else {
			dst = append(dst, "\uFFFD"...)
			i += jsInvalidUTF8Len(s[i:])
		}
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Unquote decodes one JSON string literal, quotes included, into WTF-8
// with JSON.parse semantics: escapes \uD83D\uDE80 forming a pair decode to
// the 4-byte UTF-8 of U+1F680, an unpaired \uXXXX surrogate decodes to its
// WTF-8 form, and raw bytes that are not valid UTF-8 decode to U+FFFD per
// maximal invalid subpart (as node does when reading a file as UTF-8).
// ok is false unless raw is exactly one valid JSON string literal, with no
// surrounding whitespace.
func Unquote(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	var p jsParser
	p.data = raw
	p.pos = 1
	s, err := p.parseString()
	if err != nil || p.pos != len(raw) {
		return "", false
	}
	return s, true
}

// IsWhitespace reports whether r is in ECMAScript's WhiteSpace ∪
// LineTerminator, the set String.prototype.trim strips. It is deliberately
// not unicode.IsSpace: JS includes U+FEFF and excludes U+0085, and neither
// includes U+180E (no longer Zs) or U+200B.
func IsWhitespace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680,
		0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// Trim implements String.prototype.trim on the WTF-8 string s: it strips
// leading and trailing code points for which IsWhitespace is true.
// Surrogates and invalid bytes decode as utf8.RuneError, which is not
// whitespace, so they stop the trim exactly as a lone surrogate does in JS.
func Trim(s string) string {
	for len(s) > 0 {
		if c := s[0]; c < utf8.RuneSelf {
			if !IsWhitespace(rune(c)) {
				break
			}
			s = s[1:]
			continue
		}
		r, size := utf8.DecodeRuneInString(s)
		if !IsWhitespace(r) {
			break
		}
		s = s[size:]
	}
	for len(s) > 0 {
		if c := s[len(s)-1]; c < utf8.RuneSelf {
			if !IsWhitespace(rune(c)) {
				break
			}
			s = s[:len(s)-1]
			continue
		}
		r, size := utf8.DecodeLastRuneInString(s)
		if !IsWhitespace(r) {
			break
		}
		s = s[:len(s)-size]
	}
	return s
}
