package tree

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// A deterministic generator of pi sessions for the benchmarks. Every line is
// built by the package's own constructors, so the files are byte-compatible
// with what pi's SessionManager writes; the messages follow pi's AgentMessage
// shapes (user, assistant with text/thinking/toolCall blocks, toolResult,
// bashExecution). Same config, same bytes, on every machine.

// genConfig describes one generated session.
type genConfig struct {
	entries int
	seed    uint64
	// full writes messages as pi does in practice: assistant messages with
	// "api" and a "usage" block, thinking blocks with signatures, tool
	// outputs of realistic, long-tailed size (up to ~80 KB). Without it the
	// messages are the lean ones of a short chat: short texts, assistant
	// messages with provider/model/stopReason but no usage, one-line outputs.
	full bool
	// branchEvery > 0 branches back 2..10 steps about every branchEvery
	// entries (pi's /tree navigation), a third of the time with a
	// branch_summary. 0 makes a single chain.
	branchEvery int
	// compactAt lists compaction points as fractions of entries;
	// compactEvery > 0 compacts about every compactEvery entries instead.
	compactAt    []float64
	compactEvery int
}

var (
	// gen5kConfig is the target file: a single 5,000-entry chain of
	// short exchanges with lean messages (1.35 MB: pi's line format cannot
	// reach the 870 KB at 5,000 entries; see docs/BENCHMARKS.md).
	gen5kConfig = genConfig{entries: 5000, seed: 5000, compactAt: []float64{0.45, 0.8}}
	// gen5kNoCompactionConfig is the same chain without compactions: every
	// message on the path is in the context (the worst case for ContextAt).
	gen5kNoCompactionConfig = genConfig{entries: 5000, seed: 5000}
	// gen100kConfig is a large, branched session with pi's full message shapes.
	gen100kConfig = genConfig{entries: 100_000, seed: 100_000, full: true, branchEvery: 50, compactEvery: 2500}
)

// genWords is the vocabulary of generated prose: mostly ASCII code talk,
// some CJK, accents and emoji (pi's users write in many languages).
var genWords = strings.Fields(`the a to of and in is it that for this on with we
	fix test build error return value func handler parse token request buffer
	config schema cache retry timeout deadline context session entry leaf
	branch tree path file line read write edit bash grep go npm make lint
	type interface struct pointer slice map channel mutex lock worker pool
	async await promise import export module package main util auth salt
	hash verify failing passes works now should could maybe why because
	修复 测试 错误 函数 为什么 这个 文件 déjà café naïve ✅ 🚀 → …`)

var genFiles = strings.Fields(`src/auth.ts src/crypto.ts internal/tree/reader.go
	internal/tree/context.go cmd/pi-ctl/main.go package.json Makefile README.md
	src/server/router.ts src/db/pool.ts test/auth.test.ts go.mod`)

var genCodeLines = []string{
	"func (s *Session) Append(e Entry) {",
	"\tif err != nil {\n\t\treturn fmt.Errorf(\"append %s: %w\", e.ID, err)\n\t}",
	"export function verifySalt(s: string): boolean {",
	"  return s.length > 16 && /^[A-Za-z0-9+/=]+$/.test(s); // \"quoted\" \\ path",
	"const hash = createHash(\"sha256\").update(input).digest(\"hex\");",
	"PASS  test/auth.test.ts (1.2 s)",
	"FAIL  test/session.test.ts › reads a 100k file › expected 3, got 2",
	"ok  \tgithub.com/pifleet/sessionlog/internal/tree\t0.412s",
	"--- FAIL: TestReadLenient (0.00s)\n    reader_test.go:41: got 2 skipped lines, want 3",
	"drwxr-xr-x  5 dev dev  4096 Nov 30 08:51 src",
	"  \"dependencies\": { \"@mariozechner/pi-coding-agent\": \"^0.73.1\" },",
	"}",
	"",
}

var genModels = []struct{ api, provider, model string }{
	{"anthropic-messages", "anthropic", "claude-sonnet-4-5"},
	{"anthropic-messages", "anthropic", "claude-opus-4-5"},
	{"openai-responses", "openai", "gpt-5.1-codex"},
	{"google-generative-ai", "google", "gemini-2.5-pro"},
}

var genTools = []string{"read", "bash", "edit", "write", "grep", "ls"}

type sessionGen struct {
	cfg   genConfig
	r     *rand.Rand
	ids   IDGen
	s     *Session
	ms    int64 // the clock, Unix milliseconds
	leaf  int   // index of the current leaf, -1 before the first entry
	model int   // index into genModels
	calls int   // tool call counter
	msg   []byte
}

// genSession returns the session file described by cfg.
func genSession(cfg genConfig) []byte {
	g := &sessionGen{
		cfg:  cfg,
		r:    rand.New(rand.NewPCG(cfg.seed, 0x5e55_1011)),
		ids:  IDGen{R: rand.NewChaCha8([32]byte{byte(cfg.seed), byte(cfg.seed >> 8), byte(cfg.seed >> 16), 's', 'l'})},
		ms:   time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC).UnixMilli(),
		leaf: -1,
	}
	hid := fmt.Sprintf("01a22ba6-d94f-735d-ac17-%012x", cfg.seed)
	g.s = NewSession(NewHeader(hid, g.ts(), "/home/dev/project", ""))
	g.run()
	// The generator works in whole turns; keep exactly cfg.entries entries
	// (entries are only appended, so a prefix is still a valid session).
	out := append(make([]byte, 0, g.s.Bytes()+g.s.Len()+1), g.s.Header.Raw...)
	out = append(out, '\n')
	for _, e := range g.s.Entries()[:cfg.entries] {
		out = append(append(out, e.Raw...), '\n')
	}
	return out
}

func (g *sessionGen) run() {
	n := g.cfg.entries
	g.modelChange()
	g.thinkingChange()
	var compactions []int
	for _, f := range g.cfg.compactAt {
		compactions = append(compactions, int(f*float64(n)))
	}
	nextBranch := g.nextGap(g.cfg.branchEvery)
	nextCompaction := g.nextGap(g.cfg.compactEvery)
	named := false
	for g.s.Len() < n {
		switch {
		case len(compactions) > 0 && g.s.Len() >= compactions[0]:
			compactions = compactions[1:]
			g.compaction()
		case g.cfg.compactEvery > 0 && g.s.Len() >= nextCompaction:
			nextCompaction = g.s.Len() + g.nextGap(g.cfg.compactEvery)
			g.compaction()
		case g.cfg.branchEvery > 0 && g.s.Len() >= nextBranch:
			nextBranch = g.s.Len() + g.nextGap(g.cfg.branchEvery)
			g.branch()
		case !named && g.s.Len() >= 6:
			named = true
			g.add(NewSessionInfo(g.meta(), "auth salt debugging"))
		}
		g.turn()
		switch x := g.r.IntN(100); {
		case x < 3:
			g.modelChange()
		case x < 5:
			g.thinkingChange()
		case x < 9:
			g.label()
		case x < 12:
			g.bashExecution()
		case x < 13 && g.cfg.full:
			g.customMessage()
		case x < 14 && g.cfg.full:
			g.add(NewCustomEntry(g.meta(), "todo-state", fmt.Appendf(nil, `{"open":%d,"done":%d}`, g.r.IntN(9), g.r.IntN(30))))
		}
	}
}

func (g *sessionGen) nextGap(mean int) int {
	if mean <= 0 {
		return math.MaxInt
	}
	return mean/2 + g.r.IntN(mean+1)
}

// tick advances the clock by lo..hi milliseconds.
func (g *sessionGen) tick(lo, hi int) { g.ms += int64(lo + g.r.IntN(hi-lo+1)) }

func (g *sessionGen) ts() string { return FormatTimestamp(time.UnixMilli(g.ms)) }

func (g *sessionGen) meta() Meta {
	g.tick(0, 3)
	m := Meta{ID: g.ids.New(g.s.Has), Timestamp: g.ts()}
	if g.leaf >= 0 {
		m.ParentID = g.s.Entry(g.leaf).ID
	}
	return m
}

func (g *sessionGen) add(e Entry, err error) {
	if err != nil {
		panic(fmt.Sprintf("generator: %v", err))
	}
	g.s.Append(e)
	g.leaf = g.s.Len() - 1
}

// ancestor walks k steps up from the current leaf (stopping at a root).
func (g *sessionGen) ancestor(k int) int {
	i := g.leaf
	for ; k > 0 && g.s.Parent(i) >= 0; k-- {
		i = g.s.Parent(i)
	}
	return i
}

// text returns prose of about n bytes.
func (g *sessionGen) text(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			if g.r.IntN(12) == 0 {
				b.WriteString(".\n")
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(genWords[g.r.IntN(len(genWords))])
	}
	return b.String()
}

// logSize draws a size log-uniformly in [lo, hi].
func (g *sessionGen) logSize(lo, hi int) int {
	return int(math.Exp(math.Log(float64(lo)) + g.r.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
}

// output returns tool output: short in lean mode; long-tailed in full mode
// (median ~200 B, 1 in 40 above 2 KB, 1 in 1000 about 30-80 KB).
func (g *sessionGen) output() string {
	var n int
	switch {
	case !g.cfg.full:
		n = 8 + g.r.IntN(40)
	case g.r.IntN(1000) == 0:
		n = 30_000 + g.r.IntN(50_000)
	case g.r.IntN(40) == 0:
		n = g.logSize(2_000, 12_000)
	default:
		n = g.logSize(40, 800)
	}
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		if g.cfg.full || g.r.IntN(2) == 0 {
			b.WriteString(genCodeLines[g.r.IntN(len(genCodeLines))])
		} else {
			b.WriteString(g.text(12))
		}
	}
	return b.String()
}

func (g *sessionGen) message(build func(b []byte) []byte) {
	g.msg = build(g.msg[:0])
	g.add(NewMessage(g.meta(), g.msg))
}

func (g *sessionGen) appendMs(b []byte) []byte {
	b = append(b, `,"timestamp":`...)
	return strconv.AppendInt(b, g.ms, 10)
}

// turn is a user prompt, 0-3 tool rounds and the final answer.
func (g *sessionGen) turn() {
	g.tick(5_000, 90_000)
	n := 8 + g.r.IntN(40)
	if g.cfg.full {
		n = g.logSize(20, 600)
	}
	text := g.text(n)
	g.message(func(b []byte) []byte {
		b = append(b, `{"role":"user","content":`...)
		b = jsjson.AppendString(b, text)
		return append(g.appendMs(b), '}')
	})
	rounds := [...]int{0, 0, 0, 1, 1, 1, 2, 2, 3}[g.r.IntN(9)]
	if !g.cfg.full {
		rounds = [...]int{0, 0, 0, 0, 1, 1, 2}[g.r.IntN(7)]
	}
	for range rounds {
		calls := 1
		if g.r.IntN(5) == 0 {
			calls = 2
		}
		type call struct{ id, name string }
		var made []call
		g.tick(1_000, 15_000)
		g.assistant(func(b []byte) []byte {
			if g.cfg.full && g.r.IntN(3) == 0 {
				b = jsjson.AppendString(append(b, `{"type":"text","text":`...), g.text(g.logSize(10, 300)))
				b = append(b, "},"...)
			}
			for k := range calls {
				if k > 0 {
					b = append(b, ',')
				}
				g.calls++
				c := call{fmt.Sprintf("call_%04d", g.calls), genTools[g.r.IntN(len(genTools))]}
				if g.cfg.full {
					c.id = fmt.Sprintf("toolu_01%022x", g.r.Uint64())
				}
				made = append(made, c)
				b = append(b, `{"type":"toolCall","id":"`...)
				b = append(b, c.id...)
				b = append(b, `","name":"`...)
				b = append(b, c.name...)
				b = append(b, `","arguments":`...)
				b = g.arguments(b, c.name)
				b = append(b, '}')
			}
			return b
		}, "toolUse")
		for _, c := range made {
			g.tick(50, 3_000)
			out := g.output()
			isErr := g.r.IntN(15) == 0
			g.message(func(b []byte) []byte {
				b = append(b, `{"role":"toolResult","toolCallId":"`...)
				b = append(b, c.id...)
				b = append(b, `","toolName":"`...)
				b = append(b, c.name...)
				b = append(b, `","content":[{"type":"text","text":`...)
				b = jsjson.AppendString(b, out)
				b = append(b, `}],"isError":`...)
				b = strconv.AppendBool(b, isErr)
				return append(g.appendMs(b), '}')
			})
		}
	}
	g.tick(1_000, 20_000)
	g.assistant(func(b []byte) []byte {
		n := 8 + g.r.IntN(40)
		if g.cfg.full {
			n = g.logSize(20, 800)
		}
		b = append(b, `{"type":"text","text":`...)
		b = jsjson.AppendString(b, g.text(n))
		return append(b, '}')
	}, "stop")
}

func (g *sessionGen) arguments(b []byte, tool string) []byte {
	file := genFiles[g.r.IntN(len(genFiles))]
	switch tool {
	case "bash":
		return append(jsjson.AppendString(append(b, `{"command":`...), "go test ./... 2>&1 | tail -20"), '}')
	case "edit":
		if !g.cfg.full {
			return append(jsjson.AppendString(append(b, `{"path":`...), file), '}')
		}
		b = jsjson.AppendString(append(b, `{"path":`...), file)
		b = jsjson.AppendString(append(b, `,"oldText":`...), genCodeLines[g.r.IntN(len(genCodeLines))])
		b = jsjson.AppendString(append(b, `,"newText":`...), g.output())
		return append(b, '}')
	case "grep":
		return append(jsjson.AppendString(append(b, `{"pattern":`...), "func "+genWords[g.r.IntN(len(genWords))]), '}')
	}
	return append(jsjson.AppendString(append(b, `{"path":`...), file), '}')
}

// assistant writes an assistant message around the content blocks.
func (g *sessionGen) assistant(blocks func(b []byte) []byte, stop string) {
	m := genModels[g.model]
	g.message(func(b []byte) []byte {
		b = append(b, `{"role":"assistant","content":[`...)
		if g.cfg.full && g.r.IntN(10) < 3 {
			b = jsjson.AppendString(append(b, `{"type":"thinking","thinking":`...), g.text(g.logSize(40, 800)))
			sig := make([]byte, 4*(10+g.r.IntN(60)))
			for k := range sig {
				sig[k] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[g.r.IntN(64)]
			}
			b = jsjson.AppendString(append(b, `,"thinkingSignature":`...), string(sig))
			b = append(b, "},"...)
		}
		b = blocks(b)
		b = append(b, ']')
		if g.cfg.full {
			b = jsjson.AppendString(append(b, `,"api":`...), m.api)
		}
		b = jsjson.AppendString(append(b, `,"provider":`...), m.provider)
		b = jsjson.AppendString(append(b, `,"model":`...), m.model)
		if g.cfg.full {
			in, out, cache := 200+g.r.IntN(30_000), 20+g.r.IntN(2_000), g.r.IntN(150_000)
			b = fmt.Appendf(b, `,"usage":{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":0,"totalTokens":%d,"cost":{"input":%s,"output":%s,"cacheRead":%s,"cacheWrite":0,"total":%s}}`,
				in, out, cache, in+out+cache,
				jsjson.FormatNumber(float64(in)*3e-6), jsjson.FormatNumber(float64(out)*15e-6), jsjson.FormatNumber(float64(cache)*0.3e-6),
				jsjson.FormatNumber(float64(in)*3e-6+float64(out)*15e-6+float64(cache)*0.3e-6))
		}
		b = jsjson.AppendString(append(b, `,"stopReason":`...), stop)
		return append(g.appendMs(b), '}')
	})
}

func (g *sessionGen) bashExecution() {
	g.tick(2_000, 30_000)
	out := g.output()
	code := [...]int{0, 0, 0, 1, 2}[g.r.IntN(5)]
	g.message(func(b []byte) []byte {
		b = jsjson.AppendString(append(b, `{"role":"bashExecution","command":`...), "make test")
		b = jsjson.AppendString(append(b, `,"output":`...), out)
		b = fmt.Appendf(b, `,"exitCode":%d,"cancelled":false,"truncated":false`, code)
		return append(g.appendMs(b), '}')
	})
}

func (g *sessionGen) customMessage() {
	content := jsjson.AppendString(nil, g.text(g.logSize(20, 400)))
	g.add(NewCustomMessage(g.meta(), "plan-mode", content, true, nil))
}

func (g *sessionGen) modelChange() {
	g.model = (g.model + 1 + g.r.IntN(len(genModels)-1)) % len(genModels)
	m := genModels[g.model]
	g.add(NewModelChange(g.meta(), m.provider, m.model))
}

func (g *sessionGen) thinkingChange() {
	g.add(NewThinkingLevelChange(g.meta(), [...]string{"off", "low", "medium", "high"}[g.r.IntN(4)]))
}

func (g *sessionGen) label() {
	target := g.s.Entry(g.ancestor(g.r.IntN(20))).ID
	var label *string
	if g.r.IntN(6) != 0 {
		l := [...]string{"checkpoint", "root_cause_found", "good", "before-refactor", "wip"}[g.r.IntN(5)]
		label = &l
	}
	g.add(NewLabel(g.meta(), target, label))
}

// compaction keeps the path from a user message 20-80 steps back.
func (g *sessionGen) compaction() {
	kept := g.ancestor(20 + g.r.IntN(60))
	for i := kept; i >= 0; i = g.s.Parent(i) {
		if e := g.s.Entry(i); e.Kind == KindMessage && e.Role == RoleUser {
			kept = i
			break
		}
	}
	n := 200
	if g.cfg.full {
		n = g.logSize(500, 4_000)
	}
	summary := "## Goal\n" + g.text(n/3) + "\n\n## Progress\n- " + g.text(n/3) + "\n\n## Next steps\n- " + g.text(n/3)
	var details []byte
	if g.cfg.full {
		details = fmt.Appendf(nil, `{"readFiles":[%q,%q],"modifiedFiles":[%q]}`,
			genFiles[g.r.IntN(len(genFiles))], genFiles[g.r.IntN(len(genFiles))], genFiles[g.r.IntN(len(genFiles))])
	}
	g.tick(10_000, 60_000)
	g.add(NewCompaction(g.meta(), summary, g.s.Entry(kept).ID, float64(100_000+g.r.IntN(80_000)), details, nil))
}

// branch moves the leaf 2..10 steps back, as pi's /tree does, and a third
// of the time records a branch summary there.
func (g *sessionGen) branch() {
	g.leaf = g.ancestor(2 + g.r.IntN(9))
	if g.r.IntN(3) == 0 {
		from := g.s.Entry(g.leaf).ID
		g.tick(5_000, 20_000)
		g.add(NewBranchSummary(g.meta(), from, g.text(g.logSize(80, 800)), nil, nil))
	}
}

// TestGeneratedSessions checks that the benchmark generator writes what the
// benchmarks claim: valid pi files of the stated shape, the same every time.
func TestGeneratedSessions(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  genConfig
	}{{"gen5k", gen5kConfig}, {"gen5k-nocompaction", gen5kNoCompactionConfig}} {
		t.Run(tc.name, func(t *testing.T) {
			data := genSession(tc.cfg)
			if again := genSession(tc.cfg); !bytes.Equal(data, again) {
				t.Fatal("generator is not deterministic")
			}
			if probs := Check(data, ReadOptions{}); len(probs) > 0 {
				t.Fatalf("generated file has problems: %v", probs[0].Error())
			}
			f, err := Read(data, ReadOptions{Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			if f.Len() != tc.cfg.entries {
				t.Fatalf("%d entries, want %d", f.Len(), tc.cfg.entries)
			}
			if got := f.AppendJSONL(nil); !bytes.Equal(got, data) {
				t.Fatal("Read + AppendJSONL does not reproduce the generated file")
			}
			if d := len(f.PathIndices(f.Len() - 1)); d != tc.cfg.entries {
				t.Fatalf("leaf depth %d, want a single chain of %d", d, tc.cfg.entries)
			}
			counts := f.CountsByType()
			if counts["compaction"] != len(tc.cfg.compactAt) || counts["label"] == 0 || counts["model_change"] < 2 || counts["thinking_level_change"] < 2 {
				t.Fatalf("unexpected entry mix %v", counts)
			}
			t.Logf("%d entries, %d bytes (%.0f B/line), %v", f.Len(), len(data), float64(len(data))/float64(f.Len()+1), counts)
		})
	}
}
