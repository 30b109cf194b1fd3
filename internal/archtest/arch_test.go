package archtest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/pifleet/sessionlog/"

// rule is one row of a table in docs/ARCHITECTURE.md: a package and the
// import paths (ours, without the module prefix, or whole external ones) it
// names.
type rule struct {
	pkg   string
	paths []string
	line  int
}

var code = regexp.MustCompile("`([^`]+)`")

// readTable returns the rows of the table under the heading that starts
// with title: the first cell names the package, the second lists paths in
// backquotes ("nothing" for none).
func readTable(t *testing.T, doc []byte, title string) []rule {
	t.Helper()
	var rules []rule
	in := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			in = strings.HasPrefix(strings.TrimLeft(line, "# "), title)
			continue
		case !in || !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---"):
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		pkgs := code.FindAllStringSubmatch(cells[1], -1)
		if len(pkgs) == 0 {
			continue // the header row
		}
		var paths []string
		for _, m := range code.FindAllStringSubmatch(cells[2], -1) {
			paths = append(paths, m[1])
		}
		for _, p := range pkgs {
			rules = append(rules, rule{pkg: p[1], paths: paths, line: n})
		}
	}
	if len(rules) == 0 {
		t.Fatalf("docs/ARCHITECTURE.md has no table under a heading %q", title)
	}
	return rules
}

func readDoc(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// goList runs go list in the module root and returns its output lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestImportRules: every package of the module is named in the table
// "Import rules", and its row lists exactly the packages of ours that it
// imports (in its non-test files).
func TestImportRules(t *testing.T) {
	rules := map[string]rule{}
	for _, r := range readTable(t, readDoc(t), "Import rules") {
		rules[r.pkg] = r
	}
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		r, ok := rules[pkg]
		if !ok {
			t.Errorf("package %s is not in the import rules of docs/ARCHITECTURE.md: add a row", pkg)
			continue
		}
		var ours []string
		for _, imp := range fields[1:] {
			if p, isOurs := strings.CutPrefix(imp, module); isOurs {
				ours = append(ours, p)
				if !slices.Contains(r.paths, p) {
					t.Errorf("%s imports %s, which docs/ARCHITECTURE.md (line %d) does not allow", pkg, p, r.line)
				}
			}
		}
		// The row is the package's imports, not a ceiling above them: a
		// document that allows more than the code does is no longer true.
		for _, p := range r.paths {
			if !slices.Contains(ours, p) {
				t.Errorf("docs/ARCHITECTURE.md (line %d) lists %s for %s, which does not import it", r.line, p, pkg)
			}
		}
		delete(rules, pkg)
	}
	for pkg, r := range rules {
		t.Errorf("docs/ARCHITECTURE.md (line %d) names %s, which is no package of the module", r.line, pkg)
	}
}

// TestNeverLinked: no package links (directly or through what it imports)
// a module that the table "Never linked" forbids it.
func TestNeverLinked(t *testing.T) {
	for _, r := range readTable(t, readDoc(t), "Never linked") {
		for _, dep := range goList(t, "-deps", "./"+r.pkg) {
			for _, bad := range r.paths {
				if strings.HasPrefix(dep, bad) {
					t.Errorf("%s links %s; docs/ARCHITECTURE.md (line %d) forbids %s", r.pkg, dep, r.line, bad)
				}
			}
		}
	}
}

// TestDocGo: every package with non-test files says what it is in a doc.go
// of its own, where a reader of the folder looks first.
func TestDocGo(t *testing.T) {
	for _, line := range goList(t, "-f", "{{.Dir}} {{len .GoFiles}}", "./...") {
		dir, n, _ := strings.Cut(line, " ")
		if n == "0" {
			continue // test files only
		}
		b, err := os.ReadFile(filepath.Join(dir, "doc.go"))
		if err != nil {
			t.Errorf("%s has no doc.go", dir)
			continue
		}
		if !bytes.HasPrefix(b, []byte("// Package ")) && !bytes.HasPrefix(b, []byte("// Command ")) {
			t.Errorf("%s/doc.go does not open with the package comment", dir)
		}
	}
}

// testKit matches the packages that exist for tests: the suites and
// in-process nodes others' tests import (enginetest, nodetest,
// embeddedtest, jstest), and testutil.
var testKit = regexp.MustCompile(`(test|testutil)$`)

// TestNoTestKitInProduction: no package's non-test files import a test
// kit. A kit imports the layers it drives, so one imported by production
// code would draw an arrow back up the layers (and link test code into a
// binary).
func TestNoTestKitInProduction(t *testing.T) {
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...") {
		fields := strings.Fields(line)
		if testKit.MatchString(fields[0]) {
			continue
		}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, module) && testKit.MatchString(imp) {
				t.Errorf("%s imports the test kit %s", strings.TrimPrefix(fields[0], module), strings.TrimPrefix(imp, module))
			}
		}
	}
}
