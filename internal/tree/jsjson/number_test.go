package jsjson

import (
	"math"
	"testing"
)

func TestJSFormatJSNumber(t *testing.T) {
	// Go folds constant expressions exactly, so 0.1+0.2 must be computed at
	// run time to get the float64 sum JavaScript sees.
	pointOne, pointTwo := 0.1, 0.2
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-1, "-1"},
		{100, "100"},
		{1.5, "1.5"},
		{-1.5, "-1.5"},
		{0.1, "0.1"},
		{pointOne + pointTwo, "0.30000000000000004"},
		{1e21, "1e+21"},
		{1e21 - 65536*2, "999999999999999900000"},
		{1e20, "100000000000000000000"},
		{1.5e21, "1.5e+21"},
		{123456789012345678901234567890, "1.2345678901234568e+29"},
		{123456789012345680000, "123456789012345680000"},
		{1 << 53, "9007199254740992"},
		{1<<53 + 2, "9007199254740994"},
		{-(1 << 53), "-9007199254740992"},
		{1 << 63, "9223372036854776000"},
		{1e-6, "0.000001"},
		{1.5e-6, "0.0000015"},
		{1e-7, "1e-7"},
		{-1.5e-7, "-1.5e-7"},
		{0.000123, "0.000123"},
		{5e-324, "5e-324"},
		{-5e-324, "-5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{2.2250738585072014e-308, "2.2250738585072014e-308"},
		{123.456, "123.456"},
		{1e100, "1e+100"},
		{12345678.9, "12345678.9"},
		{0.5, "0.5"},
		{math.NaN(), "NaN"},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
	}
	for _, tt := range tests {
		if got := FormatNumber(tt.in); got != tt.want {
			t.Errorf("FormatNumber(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJSFormatJSNumberAllocs(t *testing.T) {
	dst := make([]byte, 0, 64)
	for _, f := range []float64{1.5e-7, 0.30000000000000004, 1e21, 42} {
		if n := testing.AllocsPerRun(100, func() { dst = appendNumber(dst[:0], f) }); n != 0 {
			t.Errorf("appendNumber(%v) allocates %v times", f, n)
		}
	}
}
