package jsjson

import (
	"math"
	"strconv"
)

// FormatNumber returns JavaScript's Number.prototype.toString() of f,
// which is also what JSON.stringify writes for a finite number: NaN gives
// "NaN", ±Inf "Infinity"/"-Infinity", -0 "0", and otherwise the shortest
// digits that round-trip, laid out by ECMAScript's Number::toString: plain
// digits below 1e21 ("100", "123456789012345680000"), plain decimals down to
// 1e-6 ("0.000001"), exponential outside that ("1e-7", "1.5e+21").
func FormatNumber(f float64) string {
	var buf [32]byte
	return string(appendNumber(buf[:0], f))
}

// appendNumber appends FormatNumber(f) to dst.
func appendNumber(dst []byte, f float64) []byte {
	switch {
	case f != f:
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		return append(dst, '0') // also -0: ToString(-0) is "0"
	}
	// Every integer of magnitude below 2^53 is exactly representable, so no
	// shorter digit string rounds to it: its exact digits are the shortest
	// ones and strconv.AppendInt is both correct and fast.
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.AppendInt(dst, int64(f), 10)
	}

	// Go's shortest round-trip digits agree with ECMAScript's choice (the
	// fewest digits, and among those the closest to f); only the layout
	// differs. 'e' gives "[-]d[.ddd]e±XX".
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	if b[0] == '-' {
		dst = append(dst, '-')
		b = b[1:]
	}
	var digits [24]byte
	k := 0
	i := 0
	for ; b[i] != 'e'; i++ {
		if b[i] != '.' {
			digits[k] = b[i]
			k++
		}
	}
	// The exponent is "+21" or "-07" style: sign, then two or three digits.
	e := 0
	for _, c := range b[i+2:] {
		e = e*10 + int(c-'0')
	}
	if b[i+1] == '-' {
		e = -e
	}
	d := digits[:k]
	// In ECMAScript's terms f = 0.d × 10^n with k digits in d.
	n := e + 1
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for j := k; j < n; j++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for j := n; j < 0; j++ {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if e >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(e), 10)
	}
	return dst
}
