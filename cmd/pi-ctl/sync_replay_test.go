package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/pisync"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// piGrowth is how pi grew one conformance file, as a list of writes: each
// rewrites the file (pi's writeFileSync) or appends to it (appendFileSync).
type piGrowth struct {
	path   string
	writes []piWrite
	flush  int // the index of the first flush in writes
}

type piWrite struct {
	rewrite bool
	data    []byte
}

// growthOf derives the writes of a pi-v3 case from its file and ops.json,
// following pi's SessionManager: nothing is written before the first
// assistant message, then the header and the backlog at once; a fork
// (createBranchedSession) starts with the forked path; a session opened
// from an empty file gets the header at once and, at the first flush, the
// header again with the backlog. Every later entry is one line, written in
// two parts so that a reader can find half a line.
func growthOf(t *testing.T, sessions string, v vector) piGrowth {
	t.Helper()
	var ops []map[string]any
	if err := json.Unmarshal(conformance.MustRead(t, filepath.Join(filepath.Dir(v.file), "ops.json")), &ops); err != nil {
		t.Fatal(err)
	}
	produced := map[string]bool{} // entries this case's own appends made
	for _, op := range ops {
		if id, ok := op["result"].(string); ok {
			produced[id] = true
		}
	}
	lines := bytes.SplitAfter(v.data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	lead, firstAssistant := len(lines), len(lines)
	for k, l := range lines {
		val, err := jsjson.ParseValue(bytes.TrimSuffix(l, []byte("\n")))
		if err != nil {
			t.Fatalf("%s:%d: %v", v.file, k+1, err)
		}
		if id, ok := val.Get("id"); ok && produced[id.Str] && lead == len(lines) {
			lead = k
		}
		if m, ok := val.Get("message"); ok && firstAssistant == len(lines) {
			if r, ok := m.Get("role"); ok && r.Kind == tree.KindString && r.Str == "assistant" {
				firstAssistant = k
			}
		}
	}
	first := max(lead, firstAssistant+1)
	h, _ := jsjson.ParseValue(bytes.TrimSuffix(lines[0], []byte("\n")))
	cwd, _ := h.Get("cwd")
	ts, _ := h.Get("timestamp")
	g := piGrowth{path: pisync.SessionPath(sessions, cwd.Str, ts.Str, v.sid)}
	if op := ops[0]; op["op"] == "openExistingFile" {
		content, _ := op["fileContent"].(string)
		g.writes = append(g.writes, piWrite{rewrite: true, data: []byte(content)}, piWrite{rewrite: true, data: lines[0]})
		lines = lines[1:]
		first--
	}
	g.flush = len(g.writes)
	g.writes = append(g.writes, piWrite{data: bytes.Join(lines[:first], nil)})
	for _, l := range lines[first:] {
		half := len(l) / 2
		g.writes = append(g.writes, piWrite{data: l[:half]}, piWrite{data: l[half:]})
	}
	return g
}

// apply makes the writes from..to-1 (for any goroutine: it reports
// failures with t.Error).
func (g piGrowth) apply(t *testing.T, from, to int) {
	for _, w := range g.writes[from:to] {
		if err := w.apply(g.path); err != nil {
			t.Error(err)
			return
		}
	}
}

func (w piWrite) apply(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	flag := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if w.rewrite {
		flag = os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(w.data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// growAll makes the writes of every growth from its from(g) up to to(g),
// all files at once, as several pi processes would.
func growAll(t *testing.T, gs []piGrowth, from, to func(piGrowth) int) {
	var wg sync.WaitGroup
	for _, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.apply(t, from(g), to(g))
		}()
	}
	wg.Wait()
}
