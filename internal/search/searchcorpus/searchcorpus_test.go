package searchcorpus

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestGenerate: the same seed writes the same files, and they hold what a
// search must handle (names, labels, branches, compactions, CJK, emoji).
func TestGenerate(t *testing.T) {
	a, err := Generate(t.TempDir(), 7, 3000)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(t.TempDir(), 7, 3000)
	if err != nil {
		t.Fatal(err)
	}
	if a.Entries < 3000 || a.Entries != b.Entries || a.Bytes != b.Bytes || len(a.Files) != len(b.Files) {
		t.Fatalf("two runs of one seed: %+v and %+v", a, b)
	}
	for i := range a.Files {
		x, _ := os.ReadFile(a.Files[i])
		y, _ := os.ReadFile(b.Files[i])
		if !bytes.Equal(x, y) {
			t.Fatalf("file %d differs between two runs of one seed", i)
		}
	}
	docs, err := Load(a)
	if err != nil {
		t.Fatal(err)
	}
	types, roles := map[string]int{}, map[string]int{}
	var cjk, emoji, offPath int
	for _, d := range docs {
		types[d.Type]++
		roles[d.Role]++
		if strings.Contains(d.Text, "为什么") {
			cjk++
		}
		if strings.Contains(d.Text, "🚀") {
			emoji++
		}
		if !d.OnPath {
			offPath++
		}
		if d.Session == "" || d.Entry == "" || d.Cwd == "" || d.Text == "" {
			t.Fatalf("doc without its session's fields: %+v", d)
		}
		if strings.Contains(d.Text, "sig") && strings.Contains(d.Text, "thinkingSignature") {
			t.Fatalf("a thinking signature is indexed: %.200s", d.Text)
		}
	}
	for _, ty := range []string{"message", "custom_message", "branch_summary", "compaction", "label", "session_info"} {
		if types[ty] == 0 {
			t.Errorf("no %s entry among %d docs", ty, len(docs))
		}
	}
	for _, r := range []string{"user", "assistant", "toolResult"} {
		if roles[r] == 0 {
			t.Errorf("no %s message", r)
		}
	}
	if cjk == 0 || emoji == 0 || offPath == 0 {
		t.Errorf("CJK in %d docs, emoji in %d, %d off the default path: want some of each", cjk, emoji, offPath)
	}
}

// TestOracle: the brute-force scan reads words, phrases, prefixes and
// filters as the engines do.
func TestOracle(t *testing.T) {
	if got := Tokens("Fix the salt_check in auth.ts 🚀 会话工具 (ÉTÉ)"); !slices.Equal(got,
		[]string{"fix", "the", "salt", "check", "in", "auth", "ts", "会话工具", "été"}) {
		t.Errorf("Tokens: %q", got)
	}
	docs, err := Load(mustGenerate(t, 14, 2500))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range Queries {
		if n := len(Oracle(docs, q)); n == 0 || n == len(docs) {
			t.Errorf("%s: %d hits of %d docs; the query does not discriminate", q.Label, n, len(docs))
		}
	}
}

func mustGenerate(t *testing.T, seed uint64, entries int) Corpus {
	t.Helper()
	c, err := Generate(t.TempDir(), seed, entries)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
