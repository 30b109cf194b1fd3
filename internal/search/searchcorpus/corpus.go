package searchcorpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Corpus is a generated set of session files.
type Corpus struct {
	Dir      string
	Files    []string // one JSONL file a session, in generation order
	Sessions int
	Entries  int   // entry lines (headers excluded)
	Bytes    int64 // JSON bytes of every line, newlines excluded
}

// Cwds are the working directories sessions are started in: a fleet's
// repositories.
var Cwds = []string{
	"/home/dev/project", "/home/dev/sessionlog", "/home/dev/pi-mono", "/srv/build/api-gateway",
	"/home/ana/src/billing", "/home/ana/src/infra", "/Users/kim/code/mobile-app", "/Users/kim/code/website",
	"/home/dev/项目/后端", "/work/ml/training", "/work/ml/eval", "/home/ops/terraform",
}

// topics give sessions their subject: the words a user later searches
// for, co-occurring as they do in real work.
var topics = []string{
	"the salt check in auth.ts fails after the password migration",
	"token refresh returns expired when the clock skews",
	"flaky retry in the job scheduler under load",
	"authentication middleware drops the session cookie",
	"authorization rules for the admin endpoints",
	"memory leak in the websocket connection pool",
	"slow query on the orders table needs an index",
	"docker build cache misses on every commit",
	"the parser panics on an empty header line",
	"rate limiter counts requests twice behind the proxy",
	"migrate the config loader from yaml to toml",
	"unicode names break the csv export",
	"deadlock between the writer and the compactor",
	"the salt rotation job never runs on sundays",
	"terraform plan wants to recreate the database",
	"oauth callback loses the state parameter",
}

var prose = strings.Fields(`the a to of and in is it that for we this with on be not as
are was if but can so then now should will would let me check look see first next also just
file function error test line value code change fix run output result case type return call
build need use add update read write find path name string list map config server client
request response handler update method field struct package module import version works
failing passing because instead again still issue problem reason looks seems correct wrong`)

var tech = strings.Fields(`auth authenticate authenticated authentication authorize authorized
author authority salt hash bcrypt argon password token session cookie header middleware
retry backoff timeout deadline context cancel goroutine channel mutex lock deadlock race
cache index query table column migration schema transaction commit rollback replica shard
stream consumer producer queue scheduler cron job worker pool leak heap profile allocation
parser lexer grammar token ast panic nil pointer slice bounds overflow unicode utf encoding
docker image layer container kubernetes pod deployment terraform plan apply state module
endpoint route handler proxy rate limiter quota websocket connection socket tls certificate
yaml toml json csv export import loader config env flag option default override`)

var cjk = []string{
	"为什么会失败？", "我先查看一下代码。", "这个函数返回错误", "测试通过了", "请帮我修复这个问题",
	"キャッシュが効かない", "テストを追加しました", "설정 파일을 확인해 주세요",
}

var emoji = []string{"🚀", "✅", "❌", "🔥", "🤔", "👍", "🎉", "⚠️"}

var tools = []string{"read", "bash", "edit", "grep", "write"}

var models = []string{"claude-sonnet-4-5", "claude-opus-4-1", "gpt-5", "gemini-2.5-pro"}

var syllables = strings.Fields("ka ri to mo ne sa lu vi de po qu an er in on ex str buf req res cfg ctx mgr svc")

// gen makes sessions deterministically from its seed.
type gen struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	vocab []string
	ms    int64
}

func newGen(seed uint64) *gen {
	r := rand.New(rand.NewPCG(seed, 0x5ea7c4))
	g := &gen{r: r, ms: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()}
	// The vocabulary: plain prose first (the most frequent), then technical
	// words, then made-up identifiers in a long tail, drawn by Zipf's law.
	g.vocab = append(append(g.vocab, prose...), tech...)
	seen := map[string]bool{}
	for _, w := range g.vocab {
		seen[w] = true
	}
	for len(g.vocab) < 30000 {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(syllables[r.IntN(len(syllables))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			g.vocab = append(g.vocab, w)
		}
	}
	g.zipf = rand.NewZipf(r, 1.07, 2, uint64(len(g.vocab)-1))
	return g
}

// words returns about n bytes of prose, with now and then a word of
// another script or an emoji.
func (g *gen) words(n int) string {
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		switch k := g.r.IntN(200); {
		case k == 0:
			b.WriteString(emoji[g.r.IntN(len(emoji))])
		case k == 1:
			b.WriteString(cjk[g.r.IntN(len(cjk))])
		case k < 8:
			b.WriteString(tech[g.r.IntN(len(tech))])
		default:
			b.WriteString(g.vocab[g.zipf.Uint64()])
		}
		if g.r.IntN(12) == 0 {
			b.WriteString(". ")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// code returns about n bytes of source-like output lines.
func (g *gen) code(n int) string {
	var b strings.Builder
	b.Grow(n + 64)
	for i := 1; b.Len() < n; i++ {
		a, c := g.vocab[g.zipf.Uint64()], g.vocab[g.zipf.Uint64()]
		switch g.r.IntN(4) {
		case 0:
			fmt.Fprintf(&b, "%d\tfunc %s%s(ctx context.Context, %s string) error {\n", i, strings.ToUpper(a[:1]), a[1:], c)
		case 1:
			fmt.Fprintf(&b, "%d\t\tif err := %s.%s(); err != nil { return fmt.Errorf(\"%s: %%w\", err) }\n", i, a, c, g.words(20))
		case 2:
			fmt.Fprintf(&b, "%d\t// %s\n", i, g.words(40+g.r.IntN(40)))
		default:
			fmt.Fprintf(&b, "src/%s/%s.go:%d: %s\n", a, c, g.r.IntN(900)+1, g.words(30))
		}
	}
	return b.String()
}

// Generate writes sessions under dir, one file a session in a folder per
// cwd as pi lays them out, until they hold at least entries entry lines.
// The same seed and entries make the same files.
func Generate(dir string, seed uint64, entries int) (Corpus, error) {
	g := newGen(seed)
	c := Corpus{Dir: dir}
	for c.Entries < entries {
		lines := g.session(min(entries-c.Entries, g.length()))
		var sid, cwd string
		var h struct{ ID, Cwd string }
		if err := json.Unmarshal(lines[0], &h); err != nil {
			return c, err
		}
		sid, cwd = h.ID, h.Cwd
		sub := filepath.Join(dir, "--"+strings.ReplaceAll(strings.Trim(cwd, "/"), "/", "-")+"--")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return c, err
		}
		name := filepath.Join(sub, fmt.Sprintf("%s_%s.jsonl", time.UnixMilli(g.ms).UTC().Format("2006-01-02T15-04-05-000Z"), sid))
		var buf bytes.Buffer
		for _, l := range lines {
			buf.Write(l)
			buf.WriteByte('\n')
			c.Bytes += int64(len(l))
		}
		if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
			return c, err
		}
		c.Files = append(c.Files, name)
		c.Sessions++
		c.Entries += len(lines) - 1
	}
	return c, nil
}

// length draws a session's number of entries: most are tens to hundreds,
// a few thousands.
func (g *gen) length() int {
	if g.r.IntN(50) == 0 {
		return 1000 + g.r.IntN(3000)
	}
	return 10 + int(g.r.ExpFloat64()*120)
}

// marshal is JSON as pi writes it: no HTML escaping.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // maps of strings and numbers always marshal
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// session returns the lines of one session of about n entries, header
// first: turns of user, assistant and tool results, with model changes,
// names, labels, custom messages, compactions and branches (a new branch
// from an earlier entry, after its summary).
func (g *gen) session(n int) [][]byte {
	sid := fmt.Sprintf("%08x-%04x-7%03x-8%03x-%012x", g.r.Uint32(), g.r.Uint32()&0xffff,
		g.r.Uint32()&0xfff, g.r.Uint32()&0xfff, g.r.Uint64()&0xffffffffffff)
	cwd := Cwds[g.r.IntN(len(Cwds))]
	topic := topics[g.r.IntN(len(topics))]
	model := models[g.r.IntN(len(models))]
	g.ms += int64(g.r.IntN(3_600_000))
	lines := [][]byte{marshal(map[string]any{"type": "session", "version": 3, "id": sid, "timestamp": g.ts(), "cwd": cwd})}
	ids := map[string]bool{}
	var order []string // entry ids in log order
	parent := ""
	add := func(typ string, fields map[string]any) string {
		id := fmt.Sprintf("%08x", g.r.Uint32())
		for ids[id] {
			id = fmt.Sprintf("%08x", g.r.Uint32())
		}
		ids[id] = true
		g.ms += int64(200 + g.r.IntN(20_000))
		fields["type"], fields["id"], fields["timestamp"] = typ, id, g.ts()
		if parent == "" {
			fields["parentId"] = nil
		} else {
			fields["parentId"] = parent
		}
		lines = append(lines, marshal(fields))
		order = append(order, id)
		parent = id
		return id
	}
	add("model_change", map[string]any{"provider": "anthropic", "modelId": model})
	if g.r.IntN(10) < 6 {
		add("session_info", map[string]any{"name": topic})
	}
	for len(order) < n {
		switch k := g.r.IntN(100); {
		case k < 2 && len(order) > 4: // a branch from an earlier entry
			from := parent
			parent = order[g.r.IntN(len(order)-1)]
			add("branch_summary", map[string]any{"fromId": from, "summary": "The branch tried " + g.words(200+g.r.IntN(400))})
		case k < 3 && len(order) > 4:
			add("compaction", map[string]any{"summary": "## Goal\n" + topic + "\n## Progress\n" + g.words(600+g.r.IntN(1500)),
				"firstKeptEntryId": order[len(order)-1-g.r.IntN(min(len(order), 4))], "tokensBefore": 50000 + g.r.IntN(100000)})
		case k < 5 && len(order) > 2:
			add("label", map[string]any{"targetId": order[g.r.IntN(len(order))], "label": []string{"bug", "fixed", "checkpoint", "todo", "salt-fix"}[g.r.IntN(5)]})
		case k < 8:
			add("custom_message", map[string]any{"customType": "note", "content": g.words(100 + g.r.IntN(300)), "display": true})
		case k < 9:
			model = models[g.r.IntN(len(models))]
			add("model_change", map[string]any{"provider": "anthropic", "modelId": model})
		default:
			g.turn(add, topic, model)
		}
	}
	if g.r.IntN(10) == 0 {
		add("session_info", map[string]any{"name": topic + " (2)"})
	}
	return lines
}

func (g *gen) ts() string { return time.UnixMilli(g.ms).UTC().Format("2006-01-02T15:04:05.000Z") }

// turn adds a user message, then one to three rounds of an assistant's
// tool call and its result, and an assistant's answer.
func (g *gen) turn(add func(string, map[string]any) string, topic, model string) {
	var user string
	switch g.r.IntN(10) {
	case 0:
		user = cjk[g.r.IntN(len(cjk))] + " " + topic
	case 1, 2, 3:
		user = topic + ". " + g.words(40+g.r.IntN(200))
	default:
		user = g.words(30 + g.r.IntN(300))
	}
	add("message", map[string]any{"message": map[string]any{"role": "user", "content": user, "timestamp": g.ms}})
	assistant := func(blocks []any, stop string) {
		add("message", map[string]any{"message": map[string]any{"role": "assistant", "content": blocks,
			"api": "anthropic-messages", "provider": "anthropic", "model": model,
			"usage":      map[string]any{"input": 1500 + g.r.IntN(50000), "output": 50 + g.r.IntN(2000), "totalTokens": 3000},
			"stopReason": stop, "timestamp": g.ms}})
	}
	for range 1 + g.r.IntN(3) {
		tool := tools[g.r.IntN(len(tools))]
		call := fmt.Sprintf("toolu_%016x", g.r.Uint64())
		blocks := []any{}
		if g.r.IntN(3) == 0 {
			blocks = append(blocks, map[string]any{"type": "thinking", "thinking": g.words(100 + g.r.IntN(400)),
				"thinkingSignature": fmt.Sprintf("sig%032x%032x", g.r.Uint64(), g.r.Uint64())})
		}
		blocks = append(blocks, map[string]any{"type": "text", "text": g.words(40 + g.r.IntN(300))},
			map[string]any{"type": "toolCall", "id": call, "name": tool, "arguments": g.arguments(tool)})
		assistant(blocks, "toolUse")
		size := 200 + int(g.r.ExpFloat64()*2500)
		if g.r.IntN(3000) == 0 {
			size = 1<<20 + g.r.IntN(2<<20) // a huge line: a whole log read back
		}
		add("message", map[string]any{"message": map[string]any{"role": "toolResult", "toolCallId": call, "toolName": tool,
			"content": []any{map[string]any{"type": "text", "text": g.code(size)}}, "isError": g.r.IntN(10) == 0, "timestamp": g.ms}})
	}
	answer := g.words(80 + g.r.IntN(600))
	if g.r.IntN(4) == 0 {
		answer = "Fixed " + topic + ". " + answer
	}
	assistant([]any{map[string]any{"type": "text", "text": answer}}, "stop")
}

func (g *gen) arguments(tool string) map[string]any {
	a, b := g.vocab[g.zipf.Uint64()], g.vocab[g.zipf.Uint64()]
	path := fmt.Sprintf("src/%s/%s.go", a, b)
	switch tool {
	case "bash":
		return map[string]any{"command": fmt.Sprintf("go test ./%s/... -run Test%s", a, b)}
	case "edit":
		return map[string]any{"path": path, "oldText": g.code(80), "newText": g.code(80)}
	case "grep":
		return map[string]any{"pattern": "func " + b, "path": "src/"}
	case "write":
		return map[string]any{"path": path, "content": g.code(300 + g.r.IntN(1500))}
	}
	return map[string]any{"path": path}
}

// Lines calls f with every line of a file, header included.
func Lines(file string, f func([]byte) error) error {
	fh, err := os.Open(file)
	if err != nil {
		return err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if err := f(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}
