package search_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/search"
	"github.com/pifleet/sessionlog/internal/search/searchcorpus"
)

// TestExtractDecoders: Extract decodes with segmentio's JSON decoder for
// speed; on every line of a generated corpus, and on lines made to find
// where decoders differ (lone surrogates, invalid UTF-8, keys in another
// case, duplicate keys, escapes, nulls and numbers where text is
// expected, deep arguments, a huge line), it gives what encoding/json's
// gives.
func TestExtractDecoders(t *testing.T) {
	c, err := searchcorpus.Generate(t.TempDir(), 7, 5000)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for _, f := range c.Files {
		if err := searchcorpus.Lines(f, func(l []byte) error {
			lines = append(lines, append([]byte(nil), l...))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	deep := strings.Repeat(`{"a":[`, 200) + `"deep text"` + strings.Repeat(`]}`, 200)
	for _, l := range []string{
		`{"type":"message","id":"s1","message":{"role":"user","content":"lone \ud800 surrogate and \udc00 and pair \ud83d\ude00"}}`,
		"{\"type\":\"message\",\"id\":\"s2\",\"message\":{\"role\":\"user\",\"content\":\"invalid \xff\xfe utf-8 \xc3\"}}",
		`{"Type":"message","ID":"s3","MESSAGE":{"Role":"user","Content":"keys in another case"}}`,
		`{"type":"message","id":"s4","id":"s4b","message":{"role":"user","content":"first"},"message":{"role":"assistant","content":"second"}}`,
		`{"type":"message","id":"s5","message":{"role":"user","content":"quote \" backslash \\ slash \/ tab \t nl \n uni \u00e9 \u0000 nul"}}`,
		`{"type":"message","id":"s6","message":{"role":"assistant","content":[{"type":"text","text":null},{"type":"text","text":42},{"type":"toolCall","name":"bash","arguments":{"command":"ls","n":1.5e300,"b":true,"z":null,"deep":` + deep + `}}]}}`,
		`{"type":"label","id":"s7","targetId":"x","label":null}`,
		`{"type":"session_info","id":"s8","name":["not","a","string"]}`,
		`{"type":"compaction","id":"s9","summary":"` + strings.Repeat("long summary words ", 200000) + `"}`,
		`{"type":"message","id":"s10","message":{"role":"user","content":"trailing"}} `,
		`{"type":"message","id":"s11","message":{"role":"user","content":"unterminated"`,
		`{"type":"message","id":"s12","message":{"role":"user","content":[{"type":"text","text":"a"},]}}`,
		`{"type":"custom_message","id":"s13","customType":"notes","content":[{"type":"text","text":"block"}],"display":true}`,
	} {
		lines = append(lines, []byte(l))
	}
	for i, l := range lines {
		got, gotOK := search.Extract(l)
		want, wantOK := search.ExtractStd(l)
		if gotOK != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("line %d (%.200s):\nsegmentio:     %v %+v\nencoding/json: %v %+v", i+1, l, gotOK, got, wantOK, want)
		}
	}
	t.Logf("%d lines decoded alike", len(lines))
}

// BenchmarkExtract: Extract (segmentio's decoder) against the same with
// encoding/json's, over the lines of a generated corpus, in one run.
func BenchmarkExtract(b *testing.B) {
	c, err := searchcorpus.Generate(b.TempDir(), 7, 2000)
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	var bytes int64
	for _, f := range c.Files {
		if err := searchcorpus.Lines(f, func(l []byte) error {
			lines = append(lines, append([]byte(nil), l...))
			bytes += int64(len(l))
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name string
		fn   func([]byte) (search.Doc, bool)
	}{{"encoding-json", search.ExtractStd}, {"segmentio", search.Extract}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(bytes)
			for b.Loop() {
				for _, l := range lines {
					bc.fn(l)
				}
			}
		})
	}
}
