package pisync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watch syncs every file under the directories, then each file again as
// it changes, until ctx ends (nil then). Directories are watched
// recursively, new ones included; every Rescan all files are looked at
// again, because events are lost on some file systems (and on overflow),
// and files the cluster could not take are retried. It returns early only
// when a directory cannot be watched at all.
func (s *Syncer) Watch(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	for _, d := range s.o.Dirs {
		// pi creates the directory at its first session; watch it from now.
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := s.watchTree(w, d); err != nil {
			return err
		}
	}
	// pending is when each file is to be read: Settle after the first
	// event of a burst (pi's first flush may be many writes), never later
	// for more events, so a file written without pause is still read.
	pending := map[string]time.Time{}
	schedule := func(p string, at time.Time) {
		if t, ok := pending[p]; !ok || at.Before(t) {
			pending[p] = at
		}
	}
	rescan := func() {
		files, err := s.find()
		if err != nil {
			s.o.Warn(fmt.Sprintf("rescan: %v", err))
		}
		now := time.Now()
		for _, p := range files {
			schedule(p, now)
		}
		s.forgetMissing(files)
	}
	rescan()
	ticker := time.NewTicker(s.o.Rescan)
	defer ticker.Stop()
	timer := time.NewTimer(0)
	defer timer.Stop()
	retryAfter := time.Second
	var backedOff time.Time // when retryAfter last grew
	for {
		select {
		case <-ctx.Done():
			return s.save(true)
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("file watcher closed")
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
					// A new directory: watch it, and sync what it already holds
					// (files created before the watch was in place).
					if err := s.watchTree(w, ev.Name); err != nil {
						s.o.Warn(fmt.Sprintf("watch %s: %v", ev.Name, err))
					}
					rescan()
				}
			}
			if strings.HasSuffix(ev.Name, ".jsonl") && ev.Name != s.deadPath && (ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create)) {
				schedule(ev.Name, time.Now().Add(s.o.Settle))
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("file watcher closed")
			}
			s.o.Warn(fmt.Sprintf("file watcher: %v (rescanning)", err))
			rescan()
		case <-ticker.C:
			rescan()
		case <-timer.C:
		}
		// Save the state if it waits (at most once a second: with many
		// files it is megabytes, and each line pi adds is a pass; what a
		// crash loses of it costs a comparison with the cluster at the
		// restart, not a resend), sync what is due, then sleep until the
		// next file or the state's save is due.
		s.saveOrWarn()
		now := time.Now()
		var due []string
		next := time.Time{}
		for p, at := range pending {
			if !at.After(now) {
				due = append(due, p)
				delete(pending, p)
			} else if next.IsZero() || at.Before(next) {
				next = at
			}
		}
		if len(due) > 0 {
			retry, err := s.pass(ctx, due)
			if err != nil && ctx.Err() == nil {
				s.problem("", fmt.Sprintf("sync: %v (retrying in %v)", err, retryAfter))
			}
			if err == nil && len(retry) == 0 {
				s.clearProblem("") // the cluster is back: a later failure is told again
				retryAfter, backedOff = time.Second, time.Time{}
			}
			for _, p := range retry {
				schedule(p, time.Now().Add(retryAfter))
			}
			// Back off once per wait, not once per failed pass: while the
			// node is down pi keeps writing, and every write is a pass of
			// its own; doubling on each had the retries minutes apart
			// within a second, long after the node was back. At most
			// maxRetryWait (or the rescan, if shorter) apart.
			if len(retry) > 0 && time.Since(backedOff) >= retryAfter {
				retryAfter, backedOff = min(2*retryAfter, s.o.Rescan, maxRetryWait), time.Now()
			}
			for _, at := range pending {
				if next.IsZero() || at.Before(next) {
					next = at
				}
			}
		}
		if at, ok := s.saveDue(); ok && (next.IsZero() || at.Before(next)) {
			next = at
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if !next.IsZero() {
			timer.Reset(time.Until(next))
		}
	}
}

// watchTree adds a watch on dir and every directory under it. A directory
// that cannot be watched (the system's limit of watches) is told and left
// to the rescans.
func (s *Syncer) watchTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			s.problem(p, fmt.Sprintf("%s: %v", p, err))
			return nil
		}
		if de.IsDir() {
			if err := w.Add(p); err != nil {
				s.problem(p, fmt.Sprintf("watch %s: %v (its files are found by the rescan every %v)", p, err, s.o.Rescan))
			}
		}
		return nil
	})
}

// forgetMissing drops the state of files under the directories that are
// gone, so the state does not grow with deleted sessions.
func (s *Syncer) forgetMissing(present []string) {
	have := make(map[string]bool, len(present))
	for _, p := range present {
		have[p] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.files {
		if !have[p] && s.under(p) {
			if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
				delete(s.files, p)
				s.dirty = true
			}
		}
	}
}

func (s *Syncer) under(p string) bool {
	for _, d := range s.o.Dirs {
		if rel, err := filepath.Rel(d, p); err == nil && !strings.HasPrefix(rel, "..") {
			return true
		}
	}
	return false
}

// maxRetryWait bounds the wait between retries while the cluster cannot be
// reached: once it is back, what pi wrote meanwhile follows within it.
const maxRetryWait = 15 * time.Second
