package seal

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	oldSecret = []byte(strings.Repeat("a1", 32))
	newSecret = []byte(strings.Repeat("b2", 32))
)

func TestSealOpen(t *testing.T) {
	r, err := NewRing(UseStore, newSecret)
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte(`{"type":"message","id":"e1","message":{"content":"MARKER"}}`)
	s := r.Seal([]byte("prefix"), plain, []byte("sid-1"))
	if !bytes.HasPrefix(s, []byte("prefix")) || len(s) != len("prefix")+len(plain)+r.Overhead() {
		t.Fatalf("sealed: %d bytes, want the prefix and %d", len(s), len(plain)+r.Overhead())
	}
	if bytes.Contains(s, []byte("MARKER")) {
		t.Fatal("the sealed message holds the plain text")
	}
	got, err := r.Open(nil, s[len("prefix"):], []byte("sid-1"))
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open: %q %v", got, err)
	}
	// Two seals of one message differ (a nonce each).
	if bytes.Equal(r.Seal(nil, plain, nil), r.Seal(nil, plain, nil)) {
		t.Error("two seals are equal: the nonce repeats")
	}
	for name, c := range map[string]struct {
		sealed, name []byte
	}{
		"another name":   {s[len("prefix"):], []byte("sid-2")},
		"a byte changed": {flip(s[len("prefix"):], 20), []byte("sid-1")},
		"truncated":      {s[len("prefix") : len("prefix")+10], []byte("sid-1")},
	} {
		if _, err := r.Open(nil, c.sealed, c.name); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: %v, want ErrOpen", name, err)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 1
	return c
}

// Rotation: a ring of the new secret and the old one opens both; the new
// secret alone does not open the old's, and every use has its own key.
func TestRotation(t *testing.T) {
	old, _ := NewRing(UseStore, oldSecret)
	both, err := NewRing(UseStore, newSecret, oldSecret)
	if err != nil {
		t.Fatal(err)
	}
	onlyNew, _ := NewRing(UseStore, newSecret)
	sOld := old.Seal(nil, []byte("x"), nil)
	sNew := both.Seal(nil, []byte("y"), nil)
	if got, err := both.Open(nil, sOld, nil); err != nil || string(got) != "x" {
		t.Errorf("old sealed, ring new+old: %q %v", got, err)
	}
	if got, err := onlyNew.Open(nil, sNew, nil); err != nil || string(got) != "y" {
		t.Errorf("sealed by new+old, ring new: %q %v (the first key must seal)", got, err)
	}
	if _, err := onlyNew.Open(nil, sOld, nil); !errors.Is(err, ErrOpen) {
		t.Errorf("old sealed, ring new: %v, want ErrOpen", err)
	}
	backup, _ := NewRing(UseBackup, newSecret)
	if _, err := backup.Open(nil, sNew, nil); !errors.Is(err, ErrOpen) {
		t.Errorf("the store's seal opened with the backup's key: %v", err)
	}
	if k := JetStreamKey(newSecret); k != JetStreamKey(newSecret) || k == string(newSecret) || k == JetStreamKey(oldSecret) {
		t.Errorf("JetStreamKey: %q", k)
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, append(append([]byte("  "), newSecret...), '\n'), 0o600)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("0123456789\n"), 0o600)
	if s, err := ReadKeyFile(good); err != nil || !bytes.Equal(s, newSecret) {
		t.Errorf("good: %q %v", s, err)
	}
	if _, err := ReadKeyFile(short); err == nil || !strings.Contains(err.Error(), short) || !strings.Contains(err.Error(), "10 bytes") {
		t.Errorf("short: %v, want an error naming the file and its length", err)
	}
	if _, err := ReadKeyFile(filepath.Join(dir, "absent")); err == nil {
		t.Error("absent: no error")
	}
	if _, err := NewRing(UseStore, newSecret, []byte("short")); err == nil {
		t.Error("a short previous secret accepted")
	}
}

// A sealed stream reads back as written, at every length around a chunk's;
// a stream cut at a chunk boundary, with a chunk changed, opened under
// another name or with another key fails.
func TestStream(t *testing.T) {
	r, _ := NewRing(UseBackup, newSecret)
	other, _ := NewRing(UseBackup, oldSecret)
	for _, n := range []int{0, 1, ChunkSize - 1, ChunkSize, ChunkSize + 1, 3*ChunkSize + 17} {
		plain := make([]byte, n)
		for i := range plain {
			plain[i] = byte(i*7 + i/251)
		}
		var sealed bytes.Buffer
		w := NewWriter(&sealed, r, "PI_SESSIONS")
		// Odd write sizes: chunking is the Writer's.
		for p := plain; len(p) > 0; {
			k := min(len(p), 1000+len(p)%777)
			if _, err := w.Write(p[:k]); err != nil {
				t.Fatal(err)
			}
			p = p[k:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(NewReader(bytes.NewReader(sealed.Bytes()), r, "PI_SESSIONS"))
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("%d bytes: read %d (%v)", n, len(got), err)
		}
		if n > 100 && bytes.Contains(sealed.Bytes(), plain[:100]) {
			t.Fatalf("%d bytes: the sealed stream holds the plain bytes", n)
		}
		bad := map[string]io.Reader{
			"another name":   NewReader(bytes.NewReader(sealed.Bytes()), r, "PI_ARCHIVE"),
			"another key":    NewReader(bytes.NewReader(sealed.Bytes()), other, "PI_SESSIONS"),
			"a byte changed": NewReader(bytes.NewReader(flip(sealed.Bytes(), len(sealed.Bytes())-5)), r, "PI_SESSIONS"),
			"data after it":  NewReader(io.MultiReader(bytes.NewReader(sealed.Bytes()), strings.NewReader("x")), r, "PI_SESSIONS"),
		}
		if n > ChunkSize {
			// Cut after the first chunk: every chunk but the last opens.
			first := len(streamMagic) + 4 + ChunkSize + r.Overhead()
			bad["cut at a chunk boundary"] = NewReader(bytes.NewReader(sealed.Bytes()[:first]), r, "PI_SESSIONS")
		}
		for what, rd := range bad {
			if _, err := io.ReadAll(rd); err == nil {
				t.Errorf("%d bytes, %s: read without an error", n, what)
			}
		}
	}
}
