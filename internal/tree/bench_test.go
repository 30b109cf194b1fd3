package tree

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
)

// Benchmarks of the session tree. Run them with
//
//	go test -run '^$' -bench . -benchmem -count 5 ./internal/tree/
//
// and see docs/BENCHMARKS.md for the figures. Every benchmark has a baseline
// measured in the same process (BenchmarkReadBaseline, BenchmarkContextBaseline):
// compare ratios, not absolute times. The generated inputs (gen_test.go) are
// built once per process, when a benchmark first needs them; a plain
// `go test` only runs TestGeneratedSessions, which checks the 5k generator.

var (
	genFile5k   = sync.OnceValue(func() []byte { return genSession(gen5kConfig) })
	genFile5kNC = sync.OnceValue(func() []byte { return genSession(gen5kNoCompactionConfig) })
	genFile100k = sync.OnceValue(func() []byte { return genSession(gen100kConfig) })

	// Parsed once for the benchmarks that start from a session in memory.
	genOpen5k   = sync.OnceValues(func() (*File, error) { return Read(genFile5k(), ReadOptions{Strict: true}) })
	genOpen5kNC = sync.OnceValues(func() (*File, error) { return Read(genFile5kNC(), ReadOptions{Strict: true}) })
	genOpen100k = sync.OnceValues(func() (*File, error) { return Read(genFile100k(), ReadOptions{Strict: true}) })
)

func mustOpen(b *testing.B, open func() (*File, error)) *File {
	b.Helper()
	f, err := open()
	if err != nil {
		b.Fatal(err)
	}
	return f
}

type benchInput struct {
	name string
	data []byte
}

// benchInputs narrows BenchmarkRead and its baselines to some inputs, to
// compare one input with its baselines in short runs on a busy machine.
var benchInputs = flag.String("inputs", "", "regexp selecting the `inputs` of BenchmarkRead and BenchmarkReadBaseline")

// readInputs are the files BenchmarkRead and its baselines parse: the
// largest public vectors (two of them version 1, which Read migrates) and
// the generated sessions.
func readInputs(b *testing.B) []benchInput {
	dir := conformanceDir(b)
	sel := regexp.MustCompile(*benchInputs)
	var ins []benchInput
	add := func(name string, data func() []byte) {
		if sel.MatchString(name) {
			ins = append(ins, benchInput{name, data()})
		}
	}
	file := func(rel string) func() []byte {
		return func() []byte { return mustRead(b, filepath.Join(dir, rel)) }
	}
	add("p11-mixed", file("pi-v3/p11-mixed/session.jsonl"))
	add("p12-wide", file("pi-v3/p12-wide/session.jsonl"))
	add("large-session-v1", file("pi-v1/large-session/original.jsonl"))
	add("before-compaction-v1", file("pi-v1/before-compaction/original.jsonl"))
	add("gen5k", genFile5k)
	add("gen100k", genFile100k)
	return ins
}

// lineCount is the number of non-empty lines, for the ns/line metric.
func lineCount(data []byte) int {
	n := 0
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		if len(line) > 0 {
			n++
		}
	}
	return n
}

func reportPerLine(b *testing.B, lines int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(lines), "ns/line")
}

// BenchmarkRead opens a session file held in memory: split, validate every
// line as JSON.parse would, decode the entries' fields, index ids, parents
// and labels (and for version 1, migrate every line to version 3).
func BenchmarkRead(b *testing.B) {
	for _, in := range readInputs(b) {
		b.Run(in.name, func(b *testing.B) {
			lines := lineCount(in.data)
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Read(in.data, ReadOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			reportPerLine(b, lines)
		})
	}
}

// BenchmarkOpen is BenchmarkRead/gen5k plus reading the file from disk (the
// page cache, after the first round): the "open" target.
func BenchmarkOpen(b *testing.B) {
	b.Run("gen5k", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "gen5k.jsonl")
		if err := os.WriteFile(path, genFile5k(), 0o644); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(genFile5k())))
		b.ReportAllocs()
		for b.Loop() {
			data, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Read(data, ReadOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadBaseline measures, on the same inputs, what touching every
// byte costs with the standard library: "split" finds the lines only,
// "jsonValid" also runs encoding/json.Valid on each, and "unmarshalMap"
// decodes each line into a map[string]any, as a naive Go port would.
func BenchmarkReadBaseline(b *testing.B) {
	baselines := []struct {
		name string
		line func([]byte) bool
	}{
		{"split", func([]byte) bool { return true }},
		{"jsonValid", json.Valid},
		{"unmarshalMap", func(line []byte) bool {
			var m map[string]any
			return json.Unmarshal(line, &m) == nil
		}},
	}
	inputs := readInputs(b)
	for _, base := range baselines {
		b.Run(base.name, func(b *testing.B) {
			for _, in := range inputs {
				b.Run(in.name, func(b *testing.B) {
					lines := lineCount(in.data)
					b.SetBytes(int64(len(in.data)))
					b.ReportAllocs()
					for b.Loop() {
						ok := 0
						for line := range bytes.SplitSeq(in.data, []byte{'\n'}) {
							if len(line) > 0 && base.line(line) {
								ok++
							}
						}
						if ok != lines {
							b.Fatalf("%d of %d lines accepted", ok, lines)
						}
					}
					reportPerLine(b, lines)
				})
			}
		})
	}
}

// BenchmarkTree builds the pre-order tree (children sorted by timestamp) and
// writes it as the nested JSON of the conformance vectors.
func BenchmarkTree(b *testing.B) {
	for _, tc := range []struct {
		name string
		open func() (*File, error)
	}{{"gen5k", genOpen5k}, {"gen100k", genOpen100k}} {
		b.Run(tc.name, func(b *testing.B) {
			f := mustOpen(b, tc.open)
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf = f.AppendTreeJSON(buf[:0], f.Tree(), TreeJSONOptions{})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(f.Len()), "ns/entry")
		})
	}
}

// contextLeaf is a leaf whose context the benchmarks build: the last entry
// of a file, which for the generated files is the deepest one.
type contextLeaf struct {
	name string
	open func() (*File, error)
	llm  bool
}

var contextLeaves = []contextLeaf{
	{"depth5k", genOpen5k, false},
	{"depth5k-llm", genOpen5k, true},
	{"depth5k-nocompaction", genOpen5kNC, false},
	{"depth5k-nocompaction-llm", genOpen5kNC, true},
	{"gen100k-leaf", genOpen100k, false},
}

// BenchmarkContext is pi's buildSessionContext for the deepest leaf, written
// as JSON: ContextAt (walk the path, find model, thinking level and the last
// compaction, collect the messages) plus Context.AppendJSON. SetBytes is the
// JSON written.
func BenchmarkContext(b *testing.B) {
	for _, tc := range contextLeaves {
		b.Run(tc.name, func(b *testing.B) {
			f := mustOpen(b, tc.open)
			leaf := f.Len() - 1
			opt := ContextOptions{LLM: tc.llm}
			c := f.ContextAt(leaf)
			buf := c.AppendJSON(nil, opt)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				c := f.ContextAt(leaf)
				buf = c.AppendJSON(buf[:0], opt)
			}
			b.ReportMetric(float64(len(c.Path)), "depth")
			b.ReportMetric(float64(len(c.Messages)), "messages")
		})
	}
}

// BenchmarkContextBaseline/memcpy copies the bytes of the same contexts'
// messages into a reused buffer: the floor for producing the message list.
func BenchmarkContextBaseline(b *testing.B) {
	b.Run("memcpy", func(b *testing.B) {
		for _, tc := range contextLeaves {
			if tc.llm {
				continue // the same bytes as the plain context, give or take the summaries
			}
			b.Run(tc.name, func(b *testing.B) {
				f := mustOpen(b, tc.open)
				c := f.ContextAt(f.Len() - 1)
				msgs := make([][]byte, len(c.Messages))
				n := 0
				for k := range c.Messages {
					msgs[k] = c.Messages[k].JSON
					n += len(msgs[k])
				}
				buf := make([]byte, 0, n)
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					buf = buf[:0]
					for _, m := range msgs {
						buf = append(buf, m...)
					}
				}
			})
		}
	})
}

// BenchmarkPath is pi's getBranch for the deepest leaf: indices, and ids.
func BenchmarkPath(b *testing.B) {
	for _, tc := range []struct {
		name string
		open func() (*File, error)
	}{{"depth5k", genOpen5k}, {"gen100k-leaf", genOpen100k}} {
		b.Run(tc.name, func(b *testing.B) {
			f := mustOpen(b, tc.open)
			leaf := f.Len() - 1
			b.ReportAllocs()
			for b.Loop() {
				f.PathIndices(leaf)
			}
			b.ReportMetric(float64(len(f.PathIndices(leaf))), "depth")
		})
		b.Run(tc.name+"-ids", func(b *testing.B) {
			f := mustOpen(b, tc.open)
			id := f.LeafID()
			b.ReportAllocs()
			for b.Loop() {
				f.Path(id)
			}
		})
	}
}

// BenchmarkAppend is Session.Append of an already parsed entry, the Store's
// per-entry cost: index the id, resolve the parent, track labels. One op is
// one entry; the session starts over (untimed) when the input runs out.
//
// Much of the cost is the amortized growth of the entries and the id map,
// and how often that garbage triggers a GC depends on the live heap. Both
// inputs are therefore loaded first, so the heap (about 110 MB, like a
// Store's) is the same whichever benchmarks ran before.
func BenchmarkAppend(b *testing.B) {
	mustOpen(b, genOpen5k)
	mustOpen(b, genOpen100k)
	for _, tc := range []struct {
		name string
		open func() (*File, error)
	}{{"gen5k", genOpen5k}, {"gen100k", genOpen100k}} {
		b.Run(tc.name, func(b *testing.B) {
			f := mustOpen(b, tc.open)
			ents := f.Entries()
			s := NewSession(f.Header)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if i == len(ents) {
					b.StopTimer()
					s, i = NewSession(f.Header), 0
					b.StartTimer()
				}
				s.Append(ents[i])
				i++
			}
		})
	}
}

// typicalAssistantLine is the assistant line of gen100k whose length is the
// median of all its assistant lines.
func typicalAssistantLine(b *testing.B) []byte {
	f := mustOpen(b, genOpen100k)
	var lines [][]byte
	for _, e := range f.Entries() {
		if e.Kind == KindMessage && e.Role == RoleAssistant {
			lines = append(lines, e.Raw)
		}
	}
	sortByLen := func(x, y []byte) int { return len(x) - len(y) }
	slices.SortStableFunc(lines, sortByLen)
	return lines[len(lines)/2]
}

// BenchmarkParseEntry decodes one typical assistant message line.
func BenchmarkParseEntry(b *testing.B) {
	line := typicalAssistantLine(b)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseEntry(line); err != nil {
			b.Fatal(err)
		}
	}
}
