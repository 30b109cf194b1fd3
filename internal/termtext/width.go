package termtext

import (
	"strings"
	"unicode"
)

// Terminal column arithmetic, enough to cut a line without breaking the
// layout: East Asian wide and fullwidth characters and emoji take two
// columns, combining marks and format characters (ZWJ, variation selectors)
// none. It is an approximation of wcwidth that errs on the wide side for
// emoji sequences, so a cut line never overflows.

// wideRanges are the blocks whose characters take two columns.
var wideRanges = [][2]rune{
	{0x1100, 0x115F},   // Hangul Jamo initials
	{0x2E80, 0x303E},   // CJK radicals, symbols and punctuation
	{0x3041, 0x33FF},   // Hiragana, Katakana, CJK compatibility
	{0x3400, 0x4DBF},   // CJK extension A
	{0x4E00, 0x9FFF},   // CJK unified ideographs
	{0xA000, 0xA4CF},   // Yi
	{0xAC00, 0xD7A3},   // Hangul syllables
	{0xF900, 0xFAFF},   // CJK compatibility ideographs
	{0xFE30, 0xFE4F},   // CJK compatibility forms
	{0xFF00, 0xFF60},   // fullwidth forms
	{0xFFE0, 0xFFE6},   // fullwidth signs
	{0x1F300, 0x1F64F}, // pictographs, emoticons
	{0x1F680, 0x1F6FF}, // transport and map symbols
	{0x1F900, 0x1F9FF}, // supplemental symbols and pictographs
	{0x1FA70, 0x1FAFF}, // symbols and pictographs extended-A
	{0x20000, 0x3FFFD}, // CJK extensions B and later
}

// runeWidth is the number of terminal columns r takes.
func runeWidth(r rune) int {
	switch {
	case r == 0x200D, unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r), unicode.Is(unicode.Cf, r):
		return 0
	case r < 0x1100:
		return 1
	}
	for _, w := range wideRanges {
		if r >= w[0] && r <= w[1] {
			return 2
		}
	}
	return 1
}

// Width is the number of terminal columns s takes.
func Width(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// Cut cuts s to at most w columns, ending it with "…" when something
// was cut. w <= 0 means no limit.
func Cut(s string, w int) string {
	if w <= 0 || Width(s) <= w {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		rw := runeWidth(r)
		if used+rw > w-1 { // keep one column for the ellipsis
			break
		}
		b.WriteRune(r)
		used += rw
	}
	b.WriteString("…")
	return b.String()
}
