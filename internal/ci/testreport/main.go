package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// Suite is one run's record: a line of the record file.
type Suite struct {
	Name     string        `json:"name"`
	Start    time.Time     `json:"start,omitzero"` // when the suite began: .ci/run runs suites side by side
	Duration time.Duration `json:"duration"`
	Packages int           `json:"packages"`
	Run      int           `json:"run"`
	Passed   int           `json:"passed"`
	Failed   []string      `json:"failed,omitempty"`
	Skipped  []Skip        `json:"skipped,omitempty"`
	Slowest  []Pkg         `json:"slowest,omitempty"` // the packages that took longest, slowest first
	Longest  []Pkg         `json:"longest,omitempty"` // the tests that took longest, slowest first
	Note     string        `json:"note,omitempty"`    // a suite not run at all, and why
}

// Pkg is a package's own duration, as go test reported it.
type Pkg struct {
	Name    string  `json:"name"`
	Elapsed float64 `json:"elapsed"`
}

// Skip is a top-level test skipped, with the reason it gave.
type Skip struct {
	Test   string `json:"test"`
	Reason string `json:"reason"`
}

func main() {
	suite := flag.String("suite", "", "the suite's name in the table")
	record := flag.String("record", "", "file the suite's record is appended to (and -table reads)")
	table := flag.Bool("table", false, "print the table of every suite in -record and exit 1 if any failed")
	skipped := flag.String("skipped", "", "record the suite as not run, with this reason")
	verbose := flag.Bool("v", false, "print every test's output as it comes, as go test -v does (for suites whose passing tests log measurements)")
	flag.Parse()
	if *record == "" {
		fail(errors.New("-record is required"))
	}
	switch {
	case *table:
		ok, err := printTable(os.Stdout, *record)
		if err != nil {
			fail(err)
		}
		if !ok {
			os.Exit(1)
		}
	case *skipped != "":
		fail(appendRecord(*record, Suite{Name: *suite, Note: *skipped}))
	default:
		start := time.Now()
		s, err := summarize(os.Stdin, os.Stdout, *verbose)
		s.Name, s.Start, s.Duration = *suite, start, time.Since(start).Round(time.Second)
		if rerr := appendRecord(*record, s); err == nil {
			err = rerr
		}
		if err != nil {
			fail(err)
		}
		if len(s.Failed) > 0 {
			os.Exit(1)
		}
	}
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
}

// summarize reads go test -json from r and prints to w what go test prints
// without -v, plus each skipped top-level test; it returns the counts.
// Output that is not JSON (a build failure's compiler errors) is printed
// as it comes.
func summarize(r io.Reader, w io.Writer, verbose bool) (Suite, error) {
	var s Suite
	// A test's output is kept until its verdict: printed if it failed,
	// its last line kept as the reason if it was skipped.
	out := map[string][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Test == "" && e.Action == "output":
			// The package's own lines: ok/FAIL, a panic outside any test,
			// TestMain's output. "=== RUN"-style framing never comes here.
			fmt.Fprint(w, e.Output)
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			s.Packages++
			if e.Action != "skip" {
				s.Slowest = append(s.Slowest, Pkg{shortPkg(e.Package), e.Elapsed})
			}
		case e.Action == "output":
			if verbose {
				fmt.Fprint(w, e.Output)
			}
			out[key] = append(out[key], e.Output)
		case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
			top := !strings.Contains(e.Test, "/")
			if top {
				s.Run++
			}
			if top && e.Action != "skip" {
				s.Longest = append(s.Longest, Pkg{shortPkg(e.Package) + "." + e.Test, e.Elapsed})
			}
			switch e.Action {
			case "pass":
				if top {
					s.Passed++
				}
			case "fail":
				// A subtest's output is its own (its parent's holds only
				// the parent's lines): print it when it fails, or the
				// failure's words are lost.
				if top {
					s.Failed = append(s.Failed, e.Package+"."+e.Test)
				}
				if !verbose {
					for _, o := range out[key] {
						fmt.Fprint(w, o)
					}
				}
				printRecap(w, e.Test, out[key])
			case "skip":
				if top {
					reason := skipReason(out[key])
					s.Skipped = append(s.Skipped, Skip{Test: shortPkg(e.Package) + "." + e.Test, Reason: reason})
					if !verbose {
						fmt.Fprintf(w, "--- SKIP: %s (%s): %s\n", e.Test, shortPkg(e.Package), reason)
					}
				}
			}
			delete(out, key)
		}
	}
	sort.Slice(s.Slowest, func(i, j int) bool { return s.Slowest[i].Elapsed > s.Slowest[j].Elapsed })
	s.Slowest = s.Slowest[:min(len(s.Slowest), 8)]
	sort.Slice(s.Longest, func(i, j int) bool { return s.Longest[i].Elapsed > s.Longest[j].Elapsed })
	s.Longest = s.Longest[:min(len(s.Longest), 12)]
	return s, sc.Err()
}

// recapLines is how many of a failed test's last messages printRecap
// repeats, and recapWidth how much of each.
const (
	recapLines = 8
	recapWidth = 400
)

// logStart is the first line of a t.Log message: go test indents it and
// names the file and line; the lines a message continues on are indented
// further and name nothing.
var logStart = regexp.MustCompile(`^ {4,}[\w.-]+\.go:\d+: `)

// printRecap repeats, after a failed test's verdict, the first line of its
// last messages. A test that dumps its processes' logs when it fails
// (compose, the cluster suites) buries the failure under them, and a
// reader who sees only the end of the output — CI's excerpt — lost it
// (stops 46 and 49 of TestComposeRegion).
func printRecap(w io.Writer, test string, lines []string) {
	var starts []string
	for _, l := range lines {
		if logStart.MatchString(l) {
			l = strings.TrimRight(strings.TrimSpace(l), "\n")
			if len(l) > recapWidth {
				l = l[:recapWidth] + " …"
			}
			starts = append(starts, l)
		}
	}
	if len(starts) == 0 {
		return
	}
	starts = starts[max(0, len(starts)-recapLines):]
	fmt.Fprintf(w, "--- FAIL recap: %s: the first line of its last %d messages (the failure, then what was printed after it):\n", test, len(starts))
	for _, l := range starts {
		fmt.Fprintf(w, "    %s\n", l)
	}
}

// skipReason is the message a skipped test gave: its last output line
// that is not go test's own framing.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		// "file_test.go:12: reason"
		if i := strings.Index(l, ".go:"); i >= 0 {
			if j := strings.Index(l[i+4:], ": "); j >= 0 {
				l = l[i+4+j+2:]
			}
		}
		return l
	}
	return "(no reason given)"
}

func shortPkg(p string) string {
	return strings.TrimPrefix(p, "github.com/pifleet/sessionlog/")
}

func appendRecord(path string, s Suite) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(s)
	if _, err := fmt.Fprintf(f, "%s\n", b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// printTable prints the suites recorded in path; ok is false if any
// failed.
func printTable(w io.Writer, path string) (ok bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var suites []Suite
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		var s Suite
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		suites = append(suites, s)
	}
	ok = true
	// Suites run side by side, so the total is the wall time from the
	// first suite's start to the last one's end, not the durations' sum.
	var first, last time.Time
	for _, s := range suites {
		if s.Start.IsZero() {
			continue
		}
		if first.IsZero() || s.Start.Before(first) {
			first = s.Start
		}
		if end := s.Start.Add(s.Duration); end.After(last) {
			last = end
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "suite\tstarted\tduration\tpackages\ttests run\tpassed\tfailed\tskipped")
	for _, s := range suites {
		if s.Note != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\tNOT RUN: %s\n", s.Name, s.Note)
			continue
		}
		if len(s.Failed) > 0 {
			ok = false
		}
		started := "-"
		if !s.Start.IsZero() {
			started = "+" + s.Start.Sub(first).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t%d\t%d\t%d\t%d\n", s.Name, started, s.Duration, s.Packages, s.Run, s.Passed, len(s.Failed), len(s.Skipped))
	}
	fmt.Fprintf(tw, "wall time\t\t%v\t\t\t\t\t\n", last.Sub(first).Round(time.Second))
	passed, failed, skipped := 0, 0, 0
	for _, s := range suites {
		passed, failed, skipped = passed+s.Passed, failed+len(s.Failed), skipped+len(s.Skipped)
	}
	if err := tw.Flush(); err != nil {
		return false, err
	}
	for _, s := range suites {
		if len(s.Slowest) > 1 {
			var ps []string
			for _, p := range s.Slowest {
				ps = append(ps, fmt.Sprintf("%s %.0fs", p.Name, p.Elapsed))
			}
			fmt.Fprintf(w, "slowest packages in %s: %s\n", s.Name, strings.Join(ps, ", "))
		}
		if len(s.Longest) > 1 {
			var ts []string
			for _, p := range s.Longest {
				ts = append(ts, fmt.Sprintf("%s %.0fs", p.Name, p.Elapsed))
			}
			fmt.Fprintf(w, "longest tests in %s: %s\n", s.Name, strings.Join(ts, ", "))
		}
	}
	for _, s := range suites {
		for _, f := range s.Failed {
			fmt.Fprintf(w, "FAILED in %s: %s\n", s.Name, f)
		}
	}
	var skips []string
	for _, s := range suites {
		for _, k := range s.Skipped {
			skips = append(skips, fmt.Sprintf("skipped in %s: %s: %s", s.Name, k.Test, k.Reason))
		}
	}
	sort.Strings(skips)
	for _, l := range skips {
		fmt.Fprintln(w, l)
	}
	// The plain closing line any CI reader understands.
	fmt.Fprintf(w, "tests: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	return ok, nil
}
