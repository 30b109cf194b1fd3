package secrets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File is one file to write: a name inside the target directory and its
// content.
type File struct {
	Name string
	Data []byte
}

// ExistsError is a file that WriteAll would overwrite and was not allowed
// to.
type ExistsError struct{ Path string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s exists (--force overwrites it)", e.Path)
}

// CheckAbsent returns an *ExistsError for the first of names that exists
// in dir. Callers check before generating, since a bcrypt hash or a key
// costs time better not spent on a refusal.
func CheckAbsent(dir string, names ...string) error {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Lstat(p); err == nil {
			return &ExistsError{Path: p}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// WriteAll creates dir (0700) and writes files into it, each 0600. Unless
// force, it first checks that none exists and writes nothing if one does,
// so a second run never leaves a half-replaced set (a CA that no longer
// matches the certificates). Each file is written atomically.
func WriteAll(dir string, files []File, force bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if !force {
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = f.Name
		}
		if err := CheckAbsent(dir, names...); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := WriteFileAtomic(filepath.Join(dir, f.Name), f.Data); err != nil {
			return err
		}
	}
	return nil
}

// WriteFileAtomic replaces path with data, mode 0600, through a temporary
// file in the same directory and a rename: a reader (pi-node on SIGHUP)
// sees the old file or the new one, never half of one, and an overwritten
// file that was readable by others is not any more.
func WriteFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
