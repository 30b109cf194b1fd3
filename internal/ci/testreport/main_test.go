package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A go test -json stream of one package: a pass, a failure with output, a
// skip with its reason, a subtest (not counted), and a line that is not
// JSON (a compiler error).
const stream = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.1}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: want 1, got 2\n"}
{"Action":"run","Package":"p","Test":"TestB/sub"}
{"Action":"output","Package":"p","Test":"TestB/sub","Output":"    b_test.go:20: the subtest's own words\n"}
{"Action":"fail","Package":"p","Test":"TestB/sub"}
{"Action":"fail","Package":"p","Test":"TestB","Elapsed":0.2}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Test":"TestC","Output":"=== RUN   TestC\n"}
{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:3: no chromium on PATH\n"}
{"Action":"output","Package":"p","Test":"TestC","Output":"--- SKIP: TestC (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestC"}
./x.go:1:1: syntax error
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.3s\n"}
{"Action":"fail","Package":"p","Elapsed":0.3}
`

func TestSummarize(t *testing.T) {
	var out bytes.Buffer
	s, err := summarize(strings.NewReader(stream), &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if s.Packages != 1 || s.Run != 3 || s.Passed != 1 || len(s.Failed) != 1 || s.Failed[0] != "p.TestB" {
		t.Errorf("counts: %+v", s)
	}
	if len(s.Skipped) != 1 || s.Skipped[0].Reason != "no chromium on PATH" {
		t.Errorf("skips: %+v", s.Skipped)
	}
	for _, want := range []string{"want 1, got 2", "the subtest's own words", "./x.go:1:1: syntax error", "FAIL\tp\t0.3s", "--- SKIP: TestC (p): no chromium on PATH"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "=== RUN") {
		t.Errorf("output has go test -v framing:\n%s", out.String())
	}
}

// A failure followed by a dump of logs: the recap after the verdict repeats
// the failure's line, and names no line of the dump.
func TestRecap(t *testing.T) {
	var in strings.Builder
	ev := func(action, output string) {
		in.WriteString(`{"Action":"` + action + `","Package":"p","Test":"TestD","Output":` + strconv.Quote(output) + "}\n")
	}
	ev("output", "=== RUN   TestD\n")
	ev("output", "    d_test.go:5: measured: 3 nodes up\n")
	ev("output", "    d_test.go:40: writers behind: w1 at 3 of 20\n")
	ev("output", "    cluster_test.go:173: compose logs (last lines per node):\n")
	for i := range 40 {
		ev("output", fmt.Sprintf("        t1_1  | [1] log line %d\n", i))
	}
	ev("output", "--- FAIL: TestD (1.00s)\n")
	in.WriteString(`{"Action":"fail","Package":"p","Test":"TestD","Elapsed":1}` + "\n")
	for _, verbose := range []bool{false, true} {
		var out bytes.Buffer
		if _, err := summarize(strings.NewReader(in.String()), &out, verbose); err != nil {
			t.Fatal(err)
		}
		_, recap, ok := strings.Cut(out.String(), "--- FAIL recap: TestD")
		if !ok {
			t.Fatalf("verbose %v: no recap:\n%s", verbose, out.String())
		}
		for _, want := range []string{"d_test.go:40: writers behind: w1 at 3 of 20", "d_test.go:5: measured", "cluster_test.go:173: compose logs"} {
			if !strings.Contains(recap, want) {
				t.Errorf("verbose %v: recap lacks %q:\n%s", verbose, want, recap)
			}
		}
		if strings.Contains(recap, "log line") {
			t.Errorf("verbose %v: recap repeats the dump:\n%s", verbose, recap)
		}
	}
}

func TestTable(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "r.jsonl")
	// Two suites side by side: the wall time is the span, not the sum.
	t0 := time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)
	if err := appendRecord(rec, Suite{Name: "unit", Start: t0, Duration: 5 * time.Minute, Packages: 3, Run: 10, Passed: 9, Skipped: []Skip{{"p.TestC", "no chromium"}}}); err != nil {
		t.Fatal(err)
	}
	if err := appendRecord(rec, Suite{Name: "process", Start: t0.Add(time.Minute), Duration: 6 * time.Minute, Packages: 1, Run: 2, Passed: 2}); err != nil {
		t.Fatal(err)
	}
	if err := appendRecord(rec, Suite{Name: "compose", Note: "no Docker engine answers"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ok, err := printTable(&out, rec)
	if err != nil || !ok {
		t.Fatalf("table: ok %v, %v", ok, err)
	}
	for _, want := range []string{"NOT RUN: no Docker engine answers", "skipped in unit: p.TestC: no chromium", "+1m0s", "wall time           7m0s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if err := appendRecord(rec, Suite{Name: "cluster", Failed: []string{"p.TestX"}}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := printTable(&bytes.Buffer{}, rec); ok {
		t.Error("a failed suite left the table ok")
	}
	if _, err := os.Stat(rec); err != nil {
		t.Fatal(err)
	}
}
