package conformance

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// PiFile is a conformance file as pi grows it: Start, then Pieces.
type PiFile struct {
	Name, SID string
	Data      []byte   // the file as pi leaves it
	Start     []byte   // the file before pi opened it; nil when pi created it
	Pieces    [][]byte // the rest of Data, in the order pi writes it
}

// PiFiles are the 0.73.1 fork cases (whose forked paths hold children of
// dropped labels: orphans) and every pi 1.1.0 case pi wrote a file for
// (system messages, context edits, usage, the recovered empty file, the
// damaged file). The rest of each file after Start comes line by line in
// half lines, so that a pass can read the file at any moment pi could
// leave it: pi's first flush appends its backlog a line at a time too.
func PiFiles(t *testing.T) []PiFile {
	t.Helper()
	root := Dir(t)
	var cases []string
	for _, c := range Cases(t, root, "pi-v3") {
		if strings.Contains(filepath.Base(c), "fork") {
			cases = append(cases, c)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "pi-v3-1.1")); err != nil {
		t.Skipf("no pi 1.1.0 vectors beside the repository: %v", err)
	}
	cases = append(cases, Cases(t, root, "pi-v3-1.1")...)
	var out []PiFile
	for _, c := range cases {
		data, err := os.ReadFile(filepath.Join(c, "session.jsonl"))
		if os.IsNotExist(err) {
			continue // pi wrote no file (or, p13, files of its own)
		}
		if err != nil {
			t.Fatal(err)
		}
		exp := MustValue(t, MustRead(t, filepath.Join(c, "expected.json")))
		sid, _ := Field(exp, "sessionId")
		f := PiFile{Name: filepath.Base(filepath.Dir(c)) + "/" + filepath.Base(c), SID: sid.Str, Data: data}
		var ops []struct {
			Op          string  `json:"op"`
			FileContent *string `json:"fileContent"`
		}
		if err := json.Unmarshal(MustRead(t, filepath.Join(c, "ops.json")), &ops); err != nil {
			t.Fatal(err)
		}
		if len(ops) > 0 && ops[0].Op == "openExistingFile" && ops[0].FileContent != nil {
			f.Start = []byte(*ops[0].FileContent)
			if !bytes.HasPrefix(data, f.Start) {
				t.Fatalf("%s: the file does not start with the content pi opened", f.Name)
			}
		}
		for _, l := range bytes.SplitAfter(data[len(f.Start):], []byte("\n")) {
			if len(l) > 1 {
				f.Pieces = append(f.Pieces, l[:len(l)/2], l[len(l)/2:])
			} else if len(l) == 1 {
				f.Pieces = append(f.Pieces, l) // "\n": pi ending a damaged last line
			}
		}
		out = append(out, f)
	}
	if len(out) < 18 {
		t.Fatalf("only %d pi files among the vectors", len(out))
	}
	return out
}
