package jsjson

import (
	"testing"
	"unicode/utf8"
)

func TestJSAppendJSString(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", `""`},
		{"plain", "hello", `"hello"`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		{"slash stays raw", "a/b", `"a/b"`},
		{"short escapes", "\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"other controls lowercase hex", "\x00\x01\x0b\x1a\x1f", `"\u0000\u0001\u000b\u001a\u001f"`},
		{"DEL raw", "\x7f", "\"\x7f\""},
		{"html chars raw", "<>&", `"<>&"`},
		{"U+2028 U+2029 raw", "\u2028\u2029", "\"\u2028\u2029\""},
		{"non-BMP raw", "🚀é", "\"🚀é\""},
		{"literal U+FFFD raw", "\uFFFD", "\"\uFFFD\""},
		{"lone high surrogate", "a\xed\xa0\xbdb", `"a\ud83db"`},
		{"lone low surrogate", "\xed\xb8\x80", `"\ude00"`},
		{"low then high stay lone", "\xed\xb8\x80\xed\xa0\xbd", `"\ude00\ud83d"`},
		{"WTF-8 pair written as the character", "\xed\xa0\xbd\xed\xba\x80", "\"🚀\""},
		{"high surrogate max", "\xed\xaf\xbf", `"\udbff"`},
		{"low surrogate max", "\xed\xbf\xbf", `"\udfff"`},
		{"invalid byte", "a\xffb", "\"a\uFFFDb\""},
		{"truncated sequence is one U+FFFD", "\xe2\x82A", "\"\uFFFDA\""},
		{"truncated surrogate", "\xed\xa0", "\"\uFFFD\uFFFD\""},
		{"overlong", "\xc0\xaf", "\"\uFFFD\uFFFD\""},
		{"beyond U+10FFFF", "\xf4\x90\x80\x80", "\"\uFFFD\uFFFD\uFFFD\uFFFD\""},
		{"truncated 4-byte at end", "\xf0\x9f\x98", "\"\uFFFD\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendString([]byte("x"), tt.in))
			if got != "x"+tt.want {
				t.Errorf("AppendString(%q) = %q, want %q", tt.in, got[1:], tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("output %q is not valid UTF-8", got)
			}
		})
	}
}

func TestJSUnquoteJSON(t *testing.T) {
	tests := []struct {
		name, in string
		want     string
		ok       bool
	}{
		{"empty", `""`, "", true},
		{"plain", `"abc"`, "abc", true},
		{"all short escapes", `"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t", true},
		{"unicode escapes", `"\u0041\u00e9\u20AC"`, "Aé€", true},
		{"nul", `"\u0000"`, "\x00", true},
		{"pair", `"\uD83D\uDE80"`, "🚀", true},
		{"pair lowercase", `"\ud83d\ude80"`, "🚀", true},
		{"lone high", `"\ud83d"`, "\xed\xa0\xbd", true},
		{"lone high then text", `"\ud83dx"`, "\xed\xa0\xbdx", true},
		{"lone low", `"\ude80"`, "\xed\xba\x80", true},
		{"low then high", `"\ude80\ud83d"`, "\xed\xba\x80\xed\xa0\xbd", true},
		{"high high low", `"\ud83d\ud83d\ude80"`, "\xed\xa0\xbd🚀", true},
		{"high then non-surrogate escape", `"\ud83d\u0041"`, "\xed\xa0\xbdA", true},
		{"high then short escape", `"\ud83d\n"`, "\xed\xa0\xbd\n", true},
		{"raw U+2028", "\"\u2028\"", "\u2028", true},
		{"raw non-BMP", "\"🚀\"", "🚀", true},
		{"raw DEL", "\"\x7f\"", "\x7f", true},
		{"invalid byte", "\"a\xffb\"", "a\uFFFDb", true},
		{"maximal subpart", "\"\xe2\x82A\"", "\uFFFDA", true},
		{"raw WTF-8 surrogate is invalid UTF-8", "\"\xed\xa0\xbd\"", "\uFFFD\uFFFD\uFFFD", true},
		{"overlong", "\"\xc0\xaf\"", "\uFFFD\uFFFD", true},
		{"truncated before quote", "\"\xf0\x9f\x98\"", "\uFFFD", true},
		{"mix escape and invalid", "\"\\n\xff\\u00e9\"", "\n\uFFFDé", true},
		{"raw control", "\"a\nb\"", "", false},
		{"raw tab", "\"\t\"", "", false},
		{"bad escape", `"\a"`, "", false},
		{"escaped single quote", `"\'"`, "", false},
		{"short hex", `"\u12"`, "", false},
		{"bad hex", `"\u12g4"`, "", false},
		{"bad hex in second half of pair", `"\ud83d\uzzzz"`, "", false},
		{"unterminated", `"abc`, "", false},
		{"trailing backslash", `"abc\`, "", false},
		{"trailing bytes", `"a"b`, "", false},
		{"leading space", ` "a"`, "", false},
		{"trailing space", `"a" `, "", false},
		{"single quotes", `'a'`, "", false},
		{"lone quote", `"`, "", false},
		{"nothing", ``, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Unquote([]byte(tt.in))
			if got != tt.want || ok != tt.ok {
				t.Errorf("Unquote(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestJSStringRoundTrip(t *testing.T) {
	// Every string Unquote produces must come back unchanged through
	// AppendString, which is what makes a parse/stringify cycle lossless.
	for _, in := range []string{
		`"\ud83d"`, `"\ude80\ud83d"`, `"\uD83D\uDE80"`, `"\u0000\u001f\u007f"`,
		`"\u2028"`, "\"\xff\xfe\"", `"\\\"\/"`, `"\udbff\udfff"`, `"\ud800\udc00"`,
	} {
		s, ok := Unquote([]byte(in))
		if !ok {
			t.Fatalf("Unquote(%q) failed", in)
		}
		back, ok := Unquote(AppendString(nil, s))
		if !ok || back != s {
			t.Errorf("%q: round trip gave %q, %v; want %q", in, back, ok, s)
		}
	}
}

func TestJSWhitespace(t *testing.T) {
	yes := []rune{0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2000, 0x2005, 0x200A,
		0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF}
	no := []rune{0x00, 0x08, 0x0E, 0x1F, 'a', 0x85, 0x180E, 0x200B, 0x200C, 0x2027, 0x202A,
		0x2060, 0xFFFD, 0xD800, 0x10FFFF, -1}
	for _, r := range yes {
		if !IsWhitespace(r) {
			t.Errorf("IsWhitespace(%U) = false", r)
		}
	}
	for _, r := range no {
		if IsWhitespace(r) {
			t.Errorf("IsWhitespace(%U) = true", r)
		}
	}
}

func TestJSTrimJS(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"  abc  ", "abc"},
		{"\t\n\v\f\r abc \r\n", "abc"},
		{"\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeffx\ufeff\u3000", "x"},
		{" \u0085x\u0085 ", "\u0085x\u0085"},
		{"\u200bx\u200b", "\u200bx\u200b"},
		{"\u180ex\u180e", "\u180ex\u180e"},
		{" a b ", "a b"},
		{" \u2028 ", ""},
		{"\xed\xa0\xbd ", "\xed\xa0\xbd"},
		{" \xed\xb8\x80", "\xed\xb8\x80"},
		{" \xff ", "\xff"},
		{" \uFFFD ", "\uFFFD"},
		{"\x00 x", "\x00 x"},
	}
	for _, tt := range tests {
		if got := Trim(tt.in); got != tt.want {
			t.Errorf("Trim(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJSInvalidUTF8Len(t *testing.T) {
	// The WHATWG decoder's maximal subparts, which node uses; the expected
	// counts were checked against Buffer#toString in node 20.
	tests := []struct {
		in   string
		want int
	}{
		{"\x80", 1}, {"\xbf", 1}, {"\xc0\x80", 1}, {"\xc1\xbf", 1}, {"\xc2", 1}, {"\xc2A", 1},
		{"\xe0\x80", 1}, {"\xe0\xa0", 2}, {"\xe0\xa0A", 2}, {"\xe1\x80", 2}, {"\xed\x9f", 2},
		{"\xed\xa0\x80", 1}, {"\xef\xbf", 2}, {"\xf0\x8f", 1}, {"\xf0\x90", 2},
		{"\xf0\x90\x80", 3}, {"\xf0\x90\x80A", 3}, {"\xf4\x8f\xbf", 3}, {"\xf4\x90", 1},
		{"\xf5\x80\x80\x80", 1}, {"\xff", 1}, {"\xe2\x82A", 2},
	}
	for _, tt := range tests {
		if got := jsInvalidUTF8Len(tt.in); got != tt.want {
			t.Errorf("jsInvalidUTF8Len(%q) = %d, want %d", tt.in, got, tt.want)
		}
		if got := jsInvalidUTF8Len([]byte(tt.in)); got != tt.want {
			t.Errorf("jsInvalidUTF8Len([]byte(%q)) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
