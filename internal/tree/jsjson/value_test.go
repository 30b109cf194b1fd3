package jsjson

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestJSParseValue checks JSON.stringify(JSON.parse(in)) == want; every
// expectation here was confirmed with node 20.
func TestJSParseValue(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"null", "null", "null"},
		{"true", "true", "true"},
		{"false", "false", "false"},
		{"whitespace", " \t\r\n[ 1 , 2 ]\n ", "[1,2]"},
		{"empty containers", `[{},[],""]`, `[{},[],""]`},
		{"nested", `{"a":[1,{"b":null}],"c":{"d":[[]]}}`, `{"a":[1,{"b":null}],"c":{"d":[[]]}}`},
		{"escapes normalised", `"\/\u0041\u00E9\b\u0008\u001F\u007f"`, "\"/Aé\\b\\b\\u001f\x7f\""},
		{"lone high surrogate", `"\uD83D"`, `"\ud83d"`},
		{"lone low surrogate", `"\uDE80x"`, `"\ude80x"`},
		{"surrogate pair", `"\uD83D\uDE80"`, "\"🚀\""},
		{"reversed pair", `"\uDE80\uD83D"`, `"\ude80\ud83d"`},
		{"surrogates in keys", `{"\ud83d":1,"\ud83d\ude80":2}`, "{\"\\ud83d\":1,\"🚀\":2}"},
		{"raw U+2028 in and out", "\"\u2028\u2029\"", "\"\u2028\u2029\""},
		{"escaped U+2028 comes out raw", `"\u2028"`, "\"\u2028\""},
		{"invalid UTF-8 in string", "\"\xff\xe2\x82A\"", "\"\uFFFD\uFFFDA\""},
		{"raw WTF-8 surrogate bytes", "\"\xed\xa0\xbd\"", "\"\uFFFD\uFFFD\uFFFD\""},
		{"duplicate keys", `{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{"index keys first", `{"b":1,"2":2,"1":3,"b":4}`, `{"1":3,"2":2,"b":4}`},
		{"index key edge cases", `{"x":0,"4294967295":1,"4294967294":2,"01":3,"-1":4,"1.0":5,"10":6,"9":7,"0":8}`,
			`{"0":8,"9":7,"10":6,"4294967294":2,"x":0,"4294967295":1,"01":3,"-1":4,"1.0":5}`},
		{"escaped index key", `{"a":1,"\u0031":2}`, `{"1":2,"a":1}`},
		{"duplicate index key", `{"1":1,"0":2,"1":3}`, `{"0":2,"1":3}`},
		{"__proto__ is a plain key", `{"__proto__":1,"a":2}`, `{"__proto__":1,"a":2}`},
		{"empty key", `{"":1}`, `{"":1}`},
		{"nested duplicate", `{"a":{"x":1},"a":{"y":2}}`, `{"a":{"y":2}}`},
		{"numbers", `[0,-0,0.0,-0.0,1,-1,1.5,1e0,1E2,1e+2,1e-2,0.1,100]`, `[0,0,0,0,1,-1,1.5,1,100,100,0.01,0.1,100]`},
		{"1e21", `1e21`, `1e+21`},
		{"1e-7", `1e-7`, `1e-7`},
		{"0.000001", `0.000001`, `0.000001`},
		{"big integer", `123456789012345678901234567890`, `1.2345678901234568e+29`},
		{"below 1e21", `123456789012345678901`, `123456789012345680000`},
		{"denormal", `5e-324`, `5e-324`},
		{"below denormal", `2e-324`, `0`},
		{"max float", `1.7976931348623157e308`, `1.7976931348623157e+308`},
		{"overflow", `1E400`, `null`},
		{"negative overflow", `[-1e400]`, `[null]`},
		{"underflow", `-1e-400`, `0`},
		{"long mantissa", `0.30000000000000004441`, `0.30000000000000004`},
		{"many digits", `1.00000000000000000000000000001`, `1`},
		{"2^53+1", `9007199254740993`, `9007199254740992`},
		{"huge exponent zero", `0e99999999999999999999`, `0`},
		{"zero with tiny exponent", `[0e-700,-0.000e-30,0.0e+30]`, `[0,0,0]`},
		{"huge negative exponent", `1e-99999999999999999999`, `0`},
		{"duplicate array-index and others", `{"b":1,"a":2,"1":3,"b":4,"0":5}`, `{"0":5,"1":3,"b":4,"a":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ParseValue([]byte(tt.in))
			if err != nil {
				t.Fatalf("ParseValue(%q): %v", tt.in, err)
			}
			if got := string(v.AppendJSON(nil)); got != tt.want {
				t.Errorf("ParseValue(%q).AppendJSON() = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestJSParseValueFields(t *testing.T) {
	v, err := ParseValue([]byte(`[-0, 1e400, -1e400, "\ud83d", {"k":true}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Arr) != 5 {
		t.Fatalf("got %d elements", len(v.Arr))
	}
	if a := v.Arr[0]; a.Kind != KindNumber || a.Num != 0 || !math.Signbit(a.Num) {
		t.Errorf("-0 parsed as %+v", a)
	}
	if a := v.Arr[1]; a.Kind != KindNumber || !math.IsInf(a.Num, 1) {
		t.Errorf("1e400 parsed as %+v", a)
	}
	if a := v.Arr[2]; a.Kind != KindNumber || !math.IsInf(a.Num, -1) {
		t.Errorf("-1e400 parsed as %+v", a)
	}
	if a := v.Arr[3]; a.Kind != KindString || a.Str != "\xed\xa0\xbd" {
		t.Errorf(`"\ud83d" parsed as %+v`, a)
	}
	if a := v.Arr[4]; a.Kind != KindObject || len(a.Obj) != 1 || a.Obj[0].Key != "k" || a.Obj[0].Val.Kind != KindBool || !a.Obj[0].Val.Bool {
		t.Errorf(`{"k":true} parsed as %+v`, a)
	}
}

func TestJSParseValueErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{``, "offset 0: unexpected end of JSON input"},
		{`   `, "offset 3: unexpected end of JSON input"},
		{`{"a" 1}`, "offset 5: invalid character '1' after object key"},
		{`{"abcdefghijklm" }`, "offset 17: invalid character '}' after object key"},
		{`{"a":1 "b":2}`, "offset 7: invalid character '\"' after object key:value pair"},
		{`{"a":1,}`, "offset 7: invalid character '}' looking for beginning of object key string"},
		{`{,}`, "offset 1: invalid character ',' looking for beginning of object key string"},
		{`{a:1}`, "offset 1: invalid character 'a' looking for beginning of object key string"},
		{`{'a':1}`, `offset 1: invalid character '\'' looking for beginning of object key string`},
		{`[1,]`, "offset 3: invalid character ']' looking for beginning of value"},
		{`[1 2]`, "offset 3: invalid character '2' after array element"},
		{`[1`, "offset 2: unexpected end of JSON input"},
		{`{"a":1`, "offset 6: unexpected end of JSON input"},
		{`{"a"`, "offset 4: unexpected end of JSON input"},
		{`01`, "offset 1: invalid character '1' after top-level value"},
		{`-01`, "offset 2: invalid character '1' after top-level value"},
		{`{} x`, "offset 3: invalid character 'x' after top-level value"},
		{`1 2`, "offset 2: invalid character '2' after top-level value"},
		{`NaN`, "offset 0: invalid character 'N' looking for beginning of value"},
		{`Infinity`, "offset 0: invalid character 'I' looking for beginning of value"},
		{`-Infinity`, "offset 1: invalid character 'I' in numeric literal"},
		{`+1`, "offset 0: invalid character '+' looking for beginning of value"},
		{`.5`, "offset 0: invalid character '.' looking for beginning of value"},
		{`-`, "offset 1: unexpected end of JSON input"},
		{`1.`, "offset 2: unexpected end of JSON input"},
		{`1.e5`, "offset 2: invalid character 'e' after decimal point in numeric literal"},
		{`1e`, "offset 2: unexpected end of JSON input"},
		{`1e+`, "offset 3: unexpected end of JSON input"},
		{`1ex`, "offset 2: invalid character 'x' in exponent of numeric literal"},
		{`0x10`, "offset 1: invalid character 'x' after top-level value"},
		{`tru`, "offset 3: unexpected end of JSON input"},
		{`trUe`, "offset 2: invalid character 'U' in literal true (expecting 'u')"},
		{`nul`, "offset 3: unexpected end of JSON input"},
		{`nulL`, "offset 3: invalid character 'L' in literal null (expecting 'l')"},
		{`False`, "offset 0: invalid character 'F' looking for beginning of value"},
		{`"abc`, "offset 4: unexpected end of JSON input"},
		{"\"a\nb\"", "offset 2: invalid character byte 0x0a in string literal"},
		{"\"\x00\"", "offset 1: invalid character byte 0x00 in string literal"},
		{`"\a"`, "offset 2: invalid character 'a' in string escape code"},
		{`"\x41"`, "offset 2: invalid character 'x' in string escape code"},
		{`"\u12"`, `offset 5: invalid character '"' in \u hexadecimal character escape`},
		{`"\u12`, "offset 5: unexpected end of JSON input"},
		{`"\ud83d\uzzzz"`, `offset 9: invalid character 'z' in \u hexadecimal character escape`},
		{`"\`, "offset 2: unexpected end of JSON input"},
		{"\ufeff{}", "offset 0: invalid character byte 0xef looking for beginning of value"},
		{"\v1", "offset 0: invalid character byte 0x0b looking for beginning of value"},
		{"1\u00a0", "offset 1: invalid character byte 0xc2 after top-level value"},
		{`// c` + "\n1", "offset 0: invalid character '/' looking for beginning of value"},
		{`[1]]`, "offset 3: invalid character ']' after top-level value"},
		{`]`, "offset 0: invalid character ']' looking for beginning of value"},
		{`{"a":}`, "offset 5: invalid character '}' looking for beginning of value"},
		{"\xff", "offset 0: invalid character byte 0xff looking for beginning of value"},
	}
	for _, tt := range tests {
		_, err := ParseValue([]byte(tt.in))
		if err == nil {
			t.Errorf("ParseValue(%q) succeeded, want error %q", tt.in, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("ParseValue(%q) error = %q, want %q", tt.in, err.Error(), tt.want)
		}
	}
}

func TestJSDeepNesting(t *testing.T) {
	deep := func(n int, open, close string) []byte {
		return []byte(strings.Repeat(open, n) + strings.Repeat(close, n))
	}
	// At the limit the parse succeeds and the recursive writer copes.
	v, err := ParseValue(deep(jsMaxDepth, "[", "]"))
	if err != nil {
		t.Fatalf("depth %d: %v", jsMaxDepth, err)
	}
	if out := v.AppendJSON(nil); len(out) != 2*jsMaxDepth {
		t.Errorf("depth %d: output length %d", jsMaxDepth, len(out))
	}
	objs := []byte(strings.Repeat(`{"a":`, jsMaxDepth) + "1" + strings.Repeat("}", jsMaxDepth))
	if _, err := ParseValue(objs); err != nil {
		t.Fatalf("object depth %d: %v", jsMaxDepth, err)
	}
	// Beyond it: an error, not a stack overflow.
	for _, in := range [][]byte{
		deep(jsMaxDepth+1, "[", "]"),
		deep(200000, "[", "]"),
		[]byte(strings.Repeat("[", 200000)),
		[]byte(strings.Repeat(`{"a":`, 200000)),
		deep(200000, `[{"a":`, `}]`),
	} {
		_, err := ParseValue(in)
		if err == nil || !strings.Contains(err.Error(), "nesting deeper than 100000") {
			t.Errorf("%d bytes of nesting: err = %v", len(in), err)
		}
	}
}

// TestJSRoundTrip checks that compact JSON.stringify output comes back
// unchanged; the inputs are node's own output for assorted values.
func TestJSRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2025-01-02T03:04:05.678Z","message":{"role":"user","content":[{"type":"text","text":"hi\n\"there\"\\ \u0001 \ud83d"}],"timestamp":1735787045678}}`,
		`{"0":1,"1":[],"10":{},"a":-1.5e-7,"b":1e+21,"c":0.30000000000000004,"d":"\u001f","e":true,"f":false,"g":null}`,
		"[\"\u2028\u2029\x7f🚀é\",\"\\ude80\\ud83d\",\"\",[[[]]],{\"\":{\"\":\"\"}}]",
		`[123456789012345680000,5e-324,1.7976931348623157e+308,-0.000001,9007199254740992]`,
		`"plain"`, `0`, `-1`, `null`, `[]`, `{}`,
	} {
		v, err := ParseValue([]byte(in))
		if err != nil {
			t.Fatalf("ParseValue(%s): %v", in, err)
		}
		if got := string(v.AppendJSON(nil)); got != in {
			t.Errorf("round trip of\n%s\ngave\n%s", in, got)
		}
	}
}

func TestJSObjectHelpers(t *testing.T) {
	v, err := ParseValue([]byte(`{"b":1,"5":2,"a":3}`))
	if err != nil {
		t.Fatal(err)
	}
	check := func(want string) {
		t.Helper()
		if got := string(v.AppendJSON(nil)); got != want {
			t.Errorf("got %s, want %s", got, want)
		}
		if !jsInOrder(v.Obj) {
			t.Errorf("%s: Obj lost JavaScript order", want)
		}
	}
	if p, ok := v.Get("a"); !ok || p.Num != 3 {
		t.Fatalf(`Get("a") = %v, %v`, p, ok)
	}
	p, _ := v.Get("b")
	p.Num = 10 // in place
	check(`{"5":2,"b":10,"a":3}`)
	if _, ok := v.Get("c"); ok {
		t.Error(`Get("c") found a missing key`)
	}
	v.Set("a", Value{Kind: KindString, Str: "x"})
	check(`{"5":2,"b":10,"a":"x"}`)
	v.Set("c", Value{})
	check(`{"5":2,"b":10,"a":"x","c":null}`)
	v.Set("10", Value{Kind: KindBool, Bool: true})
	v.Set("0", Value{Kind: KindNumber, Num: 0})
	v.Set("7", Value{Kind: KindNumber, Num: 7})
	v.Set("4294967295", Value{Kind: KindNumber, Num: 1})
	v.Set("01", Value{Kind: KindNumber, Num: 1})
	check(`{"0":0,"5":2,"7":7,"10":true,"b":10,"a":"x","c":null,"4294967295":1,"01":1}`)
	if !v.Delete("b") || v.Delete("b") || !v.Delete("7") {
		t.Error("Delete reported wrongly")
	}
	check(`{"0":0,"5":2,"10":true,"a":"x","c":null,"4294967295":1,"01":1}`)
	v.Set("b", Value{Kind: KindNumber, Num: 2}) // re-added keys go last
	v.Set("7", Value{Kind: KindNumber, Num: 7}) // index keys go by number
	check(`{"0":0,"5":2,"7":7,"10":true,"a":"x","c":null,"4294967295":1,"01":1,"b":2}`)

	empty := Value{Kind: KindObject}
	empty.Set("1", Value{})
	empty.Set("0", Value{})
	if got := string(empty.AppendJSON(nil)); got != `{"0":null,"1":null}` {
		t.Errorf("set on empty object: %s", got)
	}

	for _, nonObj := range []Value{{}, {Kind: KindArray}, {Kind: KindString, Str: "a"}} {
		nonObj.Set("a", Value{})
		if _, ok := nonObj.Get("a"); ok || nonObj.Delete("a") || nonObj.Obj != nil {
			t.Errorf("kind %d: object helpers acted on a non-object", nonObj.Kind)
		}
	}
}

func TestJSAppendJSONHandBuilt(t *testing.T) {
	num := func(f float64) Value { return Value{Kind: KindNumber, Num: f} }
	v := Value{Kind: KindObject, Obj: []Member{
		{"id", num(1)}, {"2", num(2)}, {"x", num(math.NaN())}, {"1", num(math.Inf(-1))}, {"y", num(math.Copysign(0, -1))},
	}}
	if got, want := string(v.AppendJSON(nil)), `{"1":null,"2":2,"id":1,"x":null,"y":0}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if v.Obj[0].Key != "id" {
		t.Error("AppendJSON reordered the caller's slice")
	}
	if got := string((Value{Kind: Kind(200)}).AppendJSON(nil)); got != "null" {
		t.Errorf("unknown kind gives %s", got)
	}
}

func TestJSTruthy(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", false}, {"  ", false}, {"false", false}, {"null", false}, {"0", false}, {"-0", false},
		{"0.0", false}, {"0e5", false}, {"-0.0e-3", false}, {"1e-400", false}, {`""`, false},
		{" false ", false}, {"\n0\n", false},
		{"true", true}, {"1", true}, {"-1", true}, {"1e400", true}, {"5e-324", true}, {`"0"`, true},
		{`"false"`, true}, {`" "`, true}, {"[]", true}, {"{}", true}, {"[0]", true}, {` "\u0000" `, true},
		{"nope", false}, {"[", false}, {"0 0", false},
	}
	for _, tt := range tests {
		if got := Truthy([]byte(tt.in)); got != tt.want {
			t.Errorf("Truthy(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if Truthy(nil) {
		t.Error("Truthy(nil) = true")
	}
}

func TestJSToString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "undefined"},
		{"not json", "undefined"},
		{`"abc"`, "abc"},
		{` "a\u2028\ud83d" `, "a\u2028\xed\xa0\xbd"},
		{`1`, "1"}, {`-0`, "0"}, {`1e21`, "1e+21"}, {`1e-7`, "1e-7"}, {`1e400`, "Infinity"}, {`-1e400`, "-Infinity"},
		{`0.1`, "0.1"},
		{`true`, "true"}, {`false`, "false"}, {`null`, "null"},
		{`{}`, "[object Object]"}, {`{"a":1}`, "[object Object]"},
		{`[]`, ""}, {`[null]`, ""}, {`[null,null]`, ","}, {`[1,"a",true]`, "1,a,true"},
		{`[1,[2,[3,null]],{},"x"]`, "1,2,3,,[object Object],x"},
		{`[[null],[[]],-0,1e400]`, ",,0,Infinity"},
		{`["\ud83d", "\ude80"]`, "\xed\xa0\xbd,\xed\xba\x80"},
	}
	for _, tt := range tests {
		if got := ToString([]byte(tt.in)); got != tt.want {
			t.Errorf("ToString(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := ToString(nil); got != "undefined" {
		t.Errorf("ToString(nil) = %q", got)
	}
}

// jsNormalize maps v to what JSON.stringify can express: non-finite numbers
// become null and -0 becomes 0.
func jsNormalize(v Value) Value {
	switch v.Kind {
	case KindNumber:
		if math.IsNaN(v.Num) || math.IsInf(v.Num, 0) {
			return Value{}
		}
		if v.Num == 0 {
			v.Num = 0
		}
	case KindArray:
		arr := make([]Value, len(v.Arr))
		for i := range v.Arr {
			arr[i] = jsNormalize(v.Arr[i])
		}
		v.Arr = arr
	case KindObject:
		obj := make([]Member, len(v.Obj))
		for i, m := range v.Obj {
			obj[i] = Member{m.Key, jsNormalize(m.Val)}
		}
		v.Obj = obj
	}
	return v
}

// jsEqual compares values exactly, numbers by their bits.
func jsEqual(a, b *Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case KindBool:
		return a.Bool == b.Bool
	case KindNumber:
		return math.Float64bits(a.Num) == math.Float64bits(b.Num)
	case KindString:
		return a.Str == b.Str
	case KindArray:
		if len(a.Arr) != len(b.Arr) {
			return false
		}
		for i := range a.Arr {
			if !jsEqual(&a.Arr[i], &b.Arr[i]) {
				return false
			}
		}
	case KindObject:
		if len(a.Obj) != len(b.Obj) {
			return false
		}
		for i := range a.Obj {
			if a.Obj[i].Key != b.Obj[i].Key || !jsEqual(&a.Obj[i].Val, &b.Obj[i].Val) {
				return false
			}
		}
	}
	return true
}

// jsCheckParse runs the invariants the fuzzer enforces on one input.
func jsCheckParse(t *testing.T, data []byte) {
	v, err := ParseValue(data)
	depth := bytes.Count(data, []byte("[")) + bytes.Count(data, []byte("{"))
	if depth < 10000 { // encoding/json stops at 10000 levels
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("ParseValue(%q) error %v, but json.Valid says %v", data, err, valid)
		}
	}
	// Whatever the input, these must not panic.
	Truthy(data)
	ToString(data)
	if err != nil {
		var se *jsSyntaxError
		if !errors.As(err, &se) || se.off < 0 || se.off > len(data) {
			t.Fatalf("ParseValue(%q): bad error %#v", data, err)
		}
		return
	}
	out := v.AppendJSON(nil)
	if !utf8.Valid(out) {
		t.Fatalf("ParseValue(%q).AppendJSON() = %q is not UTF-8", data, out)
	}
	w, err := ParseValue(out)
	if err != nil {
		t.Fatalf("output %q of %q does not parse: %v", out, data, err)
	}
	if n := jsNormalize(v); !jsEqual(&n, &w) {
		t.Fatalf("%q: output %q parses to a different value", data, out)
	}
	if out2 := w.AppendJSON(nil); !bytes.Equal(out, out2) {
		t.Fatalf("%q: stringify not idempotent: %q then %q", data, out, out2)
	}
	if v.Kind == KindString {
		trimmed := bytes.Trim(data, " \t\r\n")
		if s, ok := Unquote(trimmed); !ok || s != v.Str {
			t.Fatalf("Unquote(%q) = %q, %v; ParseValue gave %q", trimmed, s, ok, v.Str)
		}
	}
}

func FuzzParseValue(f *testing.F) {
	for _, s := range []string{
		``, `null`, `[1,2,{"a":"b"}]`, `{"b":1,"2":2,"1":3,"b":4}`, `"\ud83d\ude80\ud83d"`,
		"\"\xff\xe2\x82\u2028\"", `-0.0e-0`, `1e400`, `[[[[[]]]]]`, `{"a":{"a":{"a":1}},"a":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		jsCheckParse(t, data)
	})
}

// jsGen produces random JSON texts rich in the cases where JavaScript
// semantics matter: duplicate and array-index keys, surrogate escapes,
// invalid UTF-8, U+2028, extreme numbers and JSON whitespace.
type jsGen struct {
	r   *rand.Rand
	buf []byte
}

var jsGenKeys = []string{"a", "b", "type", "0", "1", "2", "10", "9", "01", "-1", "1.0", "4294967294",
	"4294967295", "__proto__", "", "é", `\u0031`, `\ud83d`, `\ud83d\ude80`, "constructor", "length"}

var jsGenNumbers = []string{"0", "-0", "0.0", "1", "-1", "1e21", "1e-7", "1e-6", "0.1", "0.30000000000000004",
	"123456789012345678901234567890", "5e-324", "1.7976931348623157e308", "1E400", "-1e400", "1e-400",
	"9007199254740993", "4.35", "100", "1.5e300", "2.2250738585072011e-308", "0.000001234", "12345678901234567890"}

var jsGenStrings = []string{"", "abc", `\"`, `\\`, `\/`, `\b\f\n\r\t`, `\u0000`, `\u001f`, `\u007f`, "\x7f",
	`\ud83d`, `\ude80`, `\uD83D\uDE80`, `\ude80\ud83d`, "\u2028", `\u2028`, "🚀", "é", "\xff", "\xe2\x82",
	"\xed\xa0\xbd", "\xc0\xaf", "\xf0\x9f\x98", `\u00e9`, " ", "\uFEFF", "<>&", `\uFFFF`, `\uDBFF\uDFFF`}

func (g *jsGen) ws() {
	if g.r.IntN(4) == 0 {
		g.buf = append(g.buf, " \t\r\n"[g.r.IntN(4)])
	}
}

func (g *jsGen) str(pool []string) {
	g.buf = append(g.buf, '"')
	for n := g.r.IntN(4); n > 0; n-- {
		g.buf = append(g.buf, pool[g.r.IntN(len(pool))]...)
	}
	g.buf = append(g.buf, '"')
}

func (g *jsGen) value(depth int) {
	g.ws()
	switch k := g.r.IntN(10); {
	case depth > 0 && k < 2:
		g.buf = append(g.buf, '[')
		for i, n := 0, g.r.IntN(5); i < n; i++ {
			if i > 0 {
				g.buf = append(g.buf, ',')
			}
			g.value(depth - 1)
		}
		g.ws()
		g.buf = append(g.buf, ']')
	case depth > 0 && k < 4:
		g.buf = append(g.buf, '{')
		for i, n := 0, g.r.IntN(7); i < n; i++ {
			if i > 0 {
				g.buf = append(g.buf, ',')
			}
			g.ws()
			g.buf = append(g.buf, '"')
			g.buf = append(g.buf, jsGenKeys[g.r.IntN(len(jsGenKeys))]...)
			g.buf = append(g.buf, '"')
			g.ws()
			g.buf = append(g.buf, ':')
			g.value(depth - 1)
		}
		g.ws()
		g.buf = append(g.buf, '}')
	case k < 6:
		g.str(jsGenStrings)
	case k < 7:
		g.buf = append(g.buf, jsGenNumbers[g.r.IntN(len(jsGenNumbers))]...)
	case k < 8:
		g.buf = strconv.AppendFloat(g.buf, math.Float64frombits(g.r.Uint64()&^(0x7FF<<52)|uint64(g.r.IntN(0x7FF))<<52), 'g', -1, 64)
	default:
		g.buf = append(g.buf, []string{"true", "false", "null"}[g.r.IntN(3)]...)
	}
	g.ws()
}

func (g *jsGen) doc() []byte {
	g.buf = g.buf[:0]
	g.value(4)
	return bytes.Clone(g.buf)
}

func TestJSGeneratedInvariants(t *testing.T) {
	g := jsGen{r: rand.New(rand.NewPCG(1, 2))}
	for range 3000 {
		jsCheckParse(t, g.doc())
	}
}

// jsNode runs fn, the body of a JavaScript function of s (the decoded input
// line) returning a string, over each input in one node process, returning
// its results as raw bytes; a thrown exception yields nil. It skips the test
// when node is not installed.
func jsNode(t *testing.T, fn string, inputs [][]byte) [][]byte {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	// Lines travel base64-encoded, prefixed so that empty ones survive; the
	// input is decoded as UTF-8 the way pi reads a session file.
	script := `const f = (s) => {` + fn + `};
const out = [];
for (const line of require('fs').readFileSync(0, 'latin1').split('\n')) {
	if (!line) continue;
	const s = Buffer.from(line.slice(1), 'base64').toString('utf8');
	try { out.push('x' + Buffer.from(f(s), 'utf8').toString('base64')); } catch (e) { out.push('E'); }
}
process.stdout.write(out.join('\n') + '\n');`
	var in bytes.Buffer
	for _, b := range inputs {
		in.WriteString("x" + base64.StdEncoding.EncodeToString(b) + "\n")
	}
	cmd := exec.Command(node, "-e", script)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("node returned %d results for %d inputs", len(lines), len(inputs))
	}
	res := make([][]byte, len(lines))
	for i, l := range lines {
		if l == "E" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(l[1:])
		if err != nil {
			t.Fatalf("node output %q: %v", l, err)
		}
		res[i] = b
		if res[i] == nil {
			res[i] = []byte{}
		}
	}
	return res
}

// jsNodeCorpus is the input for the node comparisons: hand-picked tricky
// texts, invalid ones included, plus generated documents.
func jsNodeCorpus() [][]byte {
	var c [][]byte
	for _, s := range []string{
		"", " ", "null", "true", "false", "[]", "{}", "0", "-0", "01", "1.", ".1", "+1", "-", "1e", "1e+", "1E400",
		"-1e400", "1e-400", "-1e-400", "1e21", "1e-7", "0.000001", "123456789012345678901234567890", "5e-324",
		"1.7976931348623157e308", "1.7976931348623159e308", "0.30000000000000004", "9007199254740993",
		"NaN", "Infinity", "tru", "nul", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "[1 2]", "{} x", "\ufeff{}", "\v1",
		"1\u00a0", "\u00a01", "\"\\ud83d\"", "\"\\ude80\\ud83d\"", "\"\\uD83D\\uDE80\"", "\"\\ud83d\\u0041\"",
		"\"\u2028\u2029\"", "\"\\u2028\"", "\"\x7f\"", "\"\x00\"", "\"\t\"", "\"\\a\"", "\"\\'\"", "\"\\u12\"",
		"\"\xff\"", "\"\xe2\x82A\"", "\"\xed\xa0\xbd\"", "\"\xc0\xaf\"", "\"\xf4\x90\x80\x80\"", "\"\xf0\x9f\x98\"",
		"\xff", "[\"\xe0\x80\"]", "{\"\xff\":1}", "{\"b\":1,\"2\":2,\"1\":3,\"b\":4}",
		`{"x":0,"4294967295":1,"4294967294":2,"01":3,"-1":4,"1.0":5,"10":6,"9":7,"0":8}`,
		`{"__proto__":{"a":1},"constructor":2}`, `{"a":{"x":1},"a":[1]}`, `[{"1":1,"0":0},{"0":0,"1":1}]`,
		"\"" + strings.Repeat("\\ud83d", 3) + "\"", "[" + strings.Repeat("1,", 100) + "1]",
		strings.Repeat("[", 1000) + strings.Repeat("]", 1000),
	} {
		c = append(c, []byte(s))
	}
	g := jsGen{r: rand.New(rand.NewPCG(3, 4))}
	for range 2000 {
		c = append(c, g.doc())
	}
	return c
}

func TestJSAgainstNodeParseStringify(t *testing.T) {
	corpus := jsNodeCorpus()
	want := jsNode(t, `return JSON.stringify(JSON.parse(s));`, corpus)
	for i, in := range corpus {
		v, err := ParseValue(in)
		switch {
		case want[i] == nil && err == nil:
			t.Errorf("ParseValue(%q) succeeded; JSON.parse throws", in)
		case want[i] != nil && err != nil:
			t.Errorf("ParseValue(%q): %v; JSON.parse gives %q", in, err, want[i])
		case err == nil:
			if got := v.AppendJSON(nil); !bytes.Equal(got, want[i]) {
				t.Errorf("ParseValue(%q).AppendJSON() =\n%q\nJSON.stringify(JSON.parse()) =\n%q", in, got, want[i])
			}
		}
	}
}

func TestJSAgainstNodeToStringTruthy(t *testing.T) {
	corpus := jsNodeCorpus()
	// String(x) may hold lone surrogates, so node returns it quoted, and
	// the Go result is quoted with AppendString to compare.
	want := jsNode(t, `const v = JSON.parse(s); return (v ? 'T' : 'F') + JSON.stringify(String(v));`, corpus)
	for i, in := range corpus {
		if want[i] == nil {
			continue // not JSON; our fallbacks are covered elsewhere
		}
		got := append([]byte{'F'}, AppendString(nil, ToString(in))...)
		if Truthy(in) {
			got[0] = 'T'
		}
		if !bytes.Equal(got, want[i]) {
			t.Errorf("%q: Go truthy+String = %q, node %q", in, got, want[i])
		}
	}
	// undefined cannot be written as JSON, so check it directly.
	if ToString(nil) != "undefined" || Truthy(nil) {
		t.Error("undefined mishandled")
	}
}

func TestJSAgainstNodeTrim(t *testing.T) {
	pieces := []string{"", " ", "\t", "\n", "\v", "\f", "\r", "\u00a0", "\u1680", "\u2000", "\u2005", "\u200a",
		"\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff", "\u0085", "\u200b", "\u180e", "\u200c",
		"\u2060", "\x00", "\x1c", "a", "é", "🚀", "\xed\xa0\xbd", "\xed\xba\x80", "\uFFFD", "x y"}
	r := rand.New(rand.NewPCG(5, 6))
	var strs []string
	for _, p := range pieces {
		strs = append(strs, p, " "+p+" ", p+"a"+p)
	}
	for range 3000 {
		var b strings.Builder
		for n := r.IntN(6); n > 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		strs = append(strs, b.String())
	}
	inputs := make([][]byte, len(strs))
	for i, s := range strs {
		inputs[i] = AppendString(nil, s)
	}
	want := jsNode(t, `return JSON.stringify(JSON.parse(s).trim());`, inputs)
	for i, s := range strs {
		if got := AppendString(nil, Trim(s)); !bytes.Equal(got, want[i]) {
			t.Errorf("Trim(%q) = %s, node %s", s, got, want[i])
		}
	}
}

func TestJSAgainstNodeNumbers(t *testing.T) {
	fs := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64,
		math.SmallestNonzeroFloat64, -math.MaxFloat64, 2.2250738585072014e-308, 1 << 53, 1<<53 + 2, 1 << 63, 1 << 64}
	for e := -330; e <= 310; e++ {
		p := math.Pow(10, float64(e))
		fs = append(fs, p, -p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1)), 1.5*p, 123456789*p)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		fs = append(fs,
			math.Float64frombits(r.Uint64()),                // any bit pattern
			float64(r.Int64N(1<<60)-1<<59),                  // integers well past 2^53
			float64(r.IntN(1000000))/float64(r.IntN(999)+1), // everyday fractions
			float64(r.IntN(100000))*math.Pow(10, float64(r.IntN(60)-30)),
		)
	}
	inputs := make([][]byte, len(fs))
	for i, f := range fs {
		// The shortest round-trip form reads back to the same double in
		// both languages; only the spelling of the specials differs.
		s := strconv.FormatFloat(f, 'g', -1, 64)
		s = strings.NewReplacer("+Inf", "Infinity", "-Inf", "-Infinity").Replace(s)
		if f == 0 && math.Signbit(f) {
			s = "-0"
		}
		inputs[i] = []byte(s)
	}
	want := jsNode(t, `return String(Number(s));`, inputs)
	bad := 0
	for i, f := range fs {
		if got := FormatNumber(f); got != string(want[i]) {
			if bad++; bad <= 20 {
				t.Errorf("FormatNumber(%s) = %s, node %s", inputs[i], got, want[i])
			}
		}
	}
}

// jsBenchDoc is a JSONL-like session file: message entries with prose,
// code, unicode, escapes and numbers, about 1 MB.
func jsBenchDoc() [][]byte {
	text := `Here is the fix:\n\n` + "```go\\nfunc main() {\\n\\tfmt.Println(\\\"héllo, wörld\\\")\\n}\\n```" +
		` — it handles “quotes” and emoji 🚀 too. ` + strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 8)
	var lines [][]byte
	size := 0
	for i := 0; size < 1<<20; i++ {
		l := []byte(`{"type":"message","id":"` + strconv.FormatInt(int64(i)*2654435761%4294967296, 16) +
			`","parentId":"a1b2c3d4","timestamp":"2025-06-01T12:34:56.789Z","message":{"role":"assistant","content":[{"type":"text","text":"` +
			text + `"},{"type":"toolCall","id":"call_` + strconv.Itoa(i) + `","name":"bash","arguments":{"command":"ls -la /tmp","timeout":120}}],` +
			`"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4","usage":{"input":12345,"output":678,"cacheRead":0,"cacheWrite":1024,` +
			`"totalTokens":14047,"cost":{"input":0.037035,"output":0.01017,"cacheRead":0,"cacheWrite":0.00384,"total":0.051045}},"stopReason":"toolUse","timestamp":1748781296789}}`)
		lines = append(lines, l)
		size += len(l)
	}
	return lines
}

func BenchmarkJSParseValue(b *testing.B) {
	lines := jsBenchDoc()
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			if _, err := ParseValue(l); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkJSAppendJSON(b *testing.B) {
	lines := jsBenchDoc()
	vals := make([]Value, len(lines))
	n := 0
	for i, l := range lines {
		vals[i], _ = ParseValue(l)
		n += len(l)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		for i := range vals {
			dst = vals[i].AppendJSON(dst[:0])
		}
	}
}
