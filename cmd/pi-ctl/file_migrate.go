package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/pifleet/sessionlog/internal/tree"
)

const fileMigrateHelp = `Usage: pi-ctl file migrate FILE -o OUT [--seed N]

Writes FILE in the current session format (version 3) exactly as pi rewrites
an older file when it opens it: version 1 entries get fresh random ids and
their predecessor as parent, version 2 "hookMessage" roles become "custom".
A version 3 file is copied without the lines pi skips (malformed lines,
repeated headers).

OUT is written atomically: a temporary file in OUT's directory, synced, then
renamed over OUT. If FILE cannot be read or migrated, nothing is written and
OUT is left as it was. "-o -" writes to stdout.

Overwriting FILE itself is allowed only when OUT is spelled exactly as FILE
("-o FILE"); the same file under another name (a symlink, "./FILE") is
refused, so an in-place rewrite is always deliberate. A symlink OUT is
followed: its target is replaced, the link kept.

A new OUT (or one replacing another file) is readable by its owner only,
mode 0600; rewriting FILE in place keeps FILE's mode.

--seed makes the new ids of a version 1 file reproducible.
`

func runFileMigrate(_ context.Context, e *env, args []string) error {
	flags := newFlags("pi-ctl file migrate")
	out := flags.String("o", "", "write the version 3 file to `OUT` (\"-\": stdout)")
	seed := flags.Uint64("seed", 0, "draw the ids of a version 1 file from seed `N` instead of crypto/rand")
	pos, err := parseArgs(e, flags, fileMigrateHelp, args, "FILE")
	if err != nil {
		return err
	}
	if *out == "" {
		return usagef(flags.Name(), "missing -o OUT")
	}
	opt := tree.ReadOptions{}
	if isSet(flags, "seed") {
		var key [32]byte
		binary.LittleEndian.PutUint64(key[:], *seed)
		opt.Rand = rand.NewChaCha8(key)
	}
	name := displayName(pos[0])
	f, err := loadSession(e, pos[0], opt)
	if err != nil {
		return err
	}
	data := f.AppendJSONL(nil)
	if *out == "-" {
		_, err := e.stdout.Write(data)
		return err
	}
	target, perm, err := outputPath(pos[0], *out)
	if err != nil {
		return err
	}
	if err := writeAtomic(target, data, perm); err != nil {
		return err
	}
	what := fmt.Sprintf("version %d", f.Header.Version)
	if f.Migrated() {
		what = fmt.Sprintf("version %d → %d", f.SourceVersion, f.Header.Version)
	}
	_, err = fmt.Fprintf(e.stdout, "%s: %s, %s written to %s\n", name, what, plural(f.Len(), "entry"), *out)
	return err
}

// isSet reports whether the flag was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// outputPath decides where "-o out" writes and with which permissions
// (0600; FILE's own when it is rewritten in place), applying the in-place
// rule of the help text.
func outputPath(in, out string) (string, fs.FileMode, error) {
	perm := fs.FileMode(0o600)
	var inInfo fs.FileInfo
	if in != "-" {
		st, err := os.Stat(in)
		if err != nil {
			return "", 0, err
		}
		inInfo = st
		if out == in {
			perm = st.Mode().Perm()
		}
	}
	outInfo, err := os.Stat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return out, perm, nil
	case err != nil:
		return "", 0, err
	case outInfo.IsDir():
		return "", 0, fmt.Errorf("-o %s: is a directory", out)
	case inInfo != nil && os.SameFile(inInfo, outInfo) && out != in:
		return "", 0, fmt.Errorf("-o %s is %s under another name; to rewrite it in place, pass -o %s exactly", out, in, in)
	}
	target, err := filepath.EvalSymlinks(out)
	if err != nil {
		return "", 0, err
	}
	return target, perm, nil
}

// writeAtomic replaces path with data: see writeAtomicFrom.
func writeAtomic(path string, data []byte, perm fs.FileMode) error {
	return writeAtomicFrom(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeAtomicFrom replaces path with what write writes: a temporary file
// in the same directory (so the rename cannot cross filesystems), synced
// before the rename, so readers and crashes see the old file or the new
// one, never part of it. On failure the temporary file is removed.
func writeAtomicFrom(path string, perm fs.FileMode, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = write(tmp); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// Make the rename itself durable; not every filesystem can sync a
	// directory, and the data is already safe, so a failure is ignored.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
