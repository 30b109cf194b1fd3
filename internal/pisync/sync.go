package pisync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/size"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Options configure a Syncer.
type Options struct {
	Client apiclient.Client
	// Dirs are the session directories, searched recursively for *.jsonl.
	Dirs []string
	// StatePath is the state file; DeadLetterPath the file refused
	// entries go to (default: the state file's name with .refused.jsonl).
	StatePath      string
	DeadLetterPath string
	// DryRun reads the files and the cluster, counts what it would send,
	// and sends and writes nothing.
	DryRun bool
	// Jobs is how many files are synced at once (default 4).
	Jobs int
	// Warn gets one line per problem (a refused entry, a changed header,
	// a file that is not a pi session).
	Warn func(string)
	// Progress is called after each file of a pass.
	Progress func(Progress)
	// RetryFor (Once) is how long files that failed for the cluster's
	// reasons (no reply in time, unreachable, 5xx) are retried while none
	// goes through: after 1 s, doubling to at most 15 s. A round that
	// brings a file in starts it again. 0 gives up at the first failure.
	// A refused token (401, 403) and a cancelled context end at once.
	RetryFor time.Duration
	// Rescan (watch mode) is how often every file is looked at again,
	// since file system events can be lost (default 30 s); Settle how long
	// after a file's first event it is read (default 50 ms), so that a
	// burst of writes is read once.
	Rescan, Settle time.Duration
	// MaxFileSize is the largest file synced (default DefaultMaxFileSize);
	// a larger one is left out, told once. A new or rewritten file is read
	// into memory whole, so this bounds the memory one file takes.
	MaxFileSize int64
}

// DefaultMaxFileSize is Options.MaxFileSize's default: far above any pi
// session (pi itself reads a session file whole), far below a 2 GiB sparse
// file that once took pi-ctl sync to 2 GiB of memory.
const DefaultMaxFileSize = 1 << 30

// Progress is how far a pass is.
type Progress struct {
	Done, Total int
	Bytes       int64
	Imported    int
	Elapsed     time.Duration
	// First is set in the first pass, the one over every file (a watch's
	// later passes take the files that changed).
	First bool
}

// Summary counts what the sync did.
type Summary struct {
	Files     int   // session files looked at
	Imported  int   // sessions imported
	Appended  int   // entries appended
	Known     int   // entries the cluster had already (skipped)
	Refused   int   // entries the cluster refused: in the dead-letter file
	Conflicts int   // files whose header or ids are not the cluster's session: not merged
	Errors    int   // files that could not be read or are not pi sessions
	Bytes     int64 // bytes sent
}

// String is the summary line, with the counts that are not zero of what
// was skipped or not merged after it.
func (s Summary) String() string {
	line := fmt.Sprintf("%d files, %d sessions imported, %d entries appended, %d refused", s.Files, s.Imported, s.Appended, s.Refused)
	for _, c := range []struct {
		n    int
		what string
	}{{s.Known, "entries already in the cluster"}, {s.Conflicts, "files not merged"}, {s.Errors, "files not readable as pi sessions"}} {
		if c.n > 0 {
			line += fmt.Sprintf(", %d %s", c.n, c.what)
		}
	}
	return line
}

// Failed reports whether the summary holds something the user must look at.
func (s Summary) Failed() bool { return s.Refused > 0 || s.Conflicts > 0 || s.Errors > 0 }

// Limits of one append: well under the NATS server's default max_payload
// (1 MiB), so a batch passes over every transport.
const (
	maxBatchEntries = 200
	maxBatchBytes   = 512 << 10
)

// Syncer streams session files into the cluster. Once runs one pass,
// Watch runs until its context ends.
type Syncer struct {
	o        Options
	deadPath string // o.DeadLetterPath made absolute, to leave it out of the files

	mu       sync.Mutex
	files    map[string]*FileState
	sum      Summary
	dirty    bool
	saved    time.Time
	reported map[string]string // path → the last problem told, so a rescan does not repeat it
	seen     map[string]bool   // the files looked at, for Summary.Files
	passes   int               // passes begun
	// compared holds the files whose new lines this process has compared
	// with the cluster: the first time, what the state does not record
	// (sent just before a crash) is skipped rather than sent again.
	compared map[string]bool
	// unanswered holds the files whose import this process sent without
	// hearing back (a timeout, a dropped connection): a 409 on the retry
	// is then most likely that import, applied, and is told as imported
	// rather than as entries the cluster already had. A file leaves it
	// when an import is answered or a comparison with the cluster's
	// session has judged it (not when that comparison failed).
	unanswered map[string]bool
	// now and after are Once's retry clock: time.Now and time.After but in
	// tests, which count retries against RetryFor without waiting for it.
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
	// read counts the bytes read from session files (tests: a grown file
	// is read from its offset, not from its start).
	read atomic.Int64
}

// countingReaderAt adds what it reads to n.
type countingReaderAt struct {
	r io.ReaderAt
	n *atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	k, err := c.r.ReadAt(p, off)
	c.n.Add(int64(k))
	return k, err
}

// New loads the state and returns a Syncer.
func New(o Options) (*Syncer, error) {
	if o.Client == nil || o.StatePath == "" || len(o.Dirs) == 0 {
		return nil, errors.New("pisync: Client, StatePath and Dirs are required")
	}
	if o.DeadLetterPath == "" {
		o.DeadLetterPath = DeadLetterPath(o.StatePath)
	}
	if o.Jobs < 1 {
		o.Jobs = 4
	}
	if o.Rescan <= 0 {
		o.Rescan = 30 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = 50 * time.Millisecond
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	files, err := loadState(o.StatePath)
	if err != nil {
		return nil, err
	}
	abs := make([]string, len(o.Dirs))
	for k, d := range o.Dirs {
		if abs[k], err = filepath.Abs(d); err != nil {
			return nil, err
		}
		// A sessions directory that is a symbolic link (to a larger disk)
		// is walked and watched where it points.
		if r, err := filepath.EvalSymlinks(abs[k]); err == nil {
			abs[k] = r
		}
	}
	o.Dirs = abs
	dead, err := filepath.Abs(o.DeadLetterPath)
	if err != nil {
		return nil, err
	}
	return &Syncer{o: o, deadPath: dead, files: files, reported: map[string]string{}, seen: map[string]bool{}, compared: map[string]bool{}, unanswered: map[string]bool{}}, nil
}

// DeadLetterPath is the default dead-letter file of a state file.
func DeadLetterPath(statePath string) string {
	return strings.TrimSuffix(statePath, filepath.Ext(statePath)) + ".refused.jsonl"
}

// Summary is what the Syncer has done so far.
func (s *Syncer) Summary() Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sum
}

// Once syncs every file under the directories once and saves the state.
// Files that fail for the cluster's reasons are retried for RetryFor (see
// Options); it returns an error when some are still not in the cluster
// then, and at once on a refused token or when ctx ends.
func (s *Syncer) Once(ctx context.Context) error {
	for _, d := range s.o.Dirs {
		if st, err := os.Stat(d); err != nil {
			return err
		} else if !st.IsDir() {
			return fmt.Errorf("%s: not a directory", d)
		}
	}
	files, err := s.find()
	if err != nil {
		return err
	}
	err = s.passRetrying(ctx, files)
	if serr := s.save(true); err == nil {
		err = serr
	}
	return err
}

// passRetrying is Once's pass and its retries. A pass that failed files
// without a fatal error (a 503 of one file) is retried as well: the file
// would otherwise be left out with nothing but a warning.
func (s *Syncer) passRetrying(ctx context.Context, files []string) error {
	now, after := time.Now, time.After
	if s.now != nil {
		now, after = s.now, s.after
	}
	moved := now()
	retry, err := s.pass(ctx, files)
	wait := time.Second
	for len(retry) > 0 && ctx.Err() == nil && !refusedToken(err) && now().Sub(moved)+wait <= s.o.RetryFor {
		why := "they failed"
		if err != nil {
			why = err.Error()
		}
		s.problem("", fmt.Sprintf("sync: %d files not in the cluster yet (%s): retrying in %v", len(retry), why, wait))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-after(wait):
		}
		before := len(retry)
		retry, err = s.pass(ctx, retry)
		if len(retry) < before {
			wait, moved = time.Second, now()
		} else {
			wait = min(2*wait, maxRetryWait)
		}
	}
	switch {
	case err != nil && len(retry) > 0:
		return fmt.Errorf("%d files not in the cluster: %w", len(retry), err)
	case err != nil:
		return err
	case len(retry) > 0:
		return fmt.Errorf("%d files not in the cluster (their errors are above)", len(retry))
	}
	return nil
}

// refusedToken reports whether the node refused the credentials: a retry
// cannot help.
func refusedToken(err error) bool {
	return apiclient.IsStatus(err, http.StatusUnauthorized) || apiclient.IsStatus(err, http.StatusForbidden)
}

// find lists the *.jsonl files under the directories, in lexical order,
// but the dead-letter file (a state kept inside a sessions directory
// would put it there).
func (s *Syncer) find() ([]string, error) {
	var files []string
	for _, d := range s.o.Dirs {
		err := filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
			switch {
			case err != nil && p == d:
				return err
			case err != nil:
				s.problem(p, fmt.Sprintf("%s: %v", p, err))
				if de != nil && de.IsDir() {
					return fs.SkipDir
				}
			case !de.IsDir() && strings.HasSuffix(p, ".jsonl") && p != s.deadPath:
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	// Directories given twice, or one inside another, list a file once.
	sort.Strings(files)
	return slices.Compact(files), nil
}

// pass syncs files with Jobs workers. It returns the files to retry (those
// that failed for a reason of the cluster's, and those a stop left
// untouched), and the first error that stops everything (unreachable,
// context).
func (s *Syncer) pass(ctx context.Context, files []string) (retry []string, err error) {
	start := time.Now()
	s.mu.Lock()
	firstPass := s.passes == 0
	s.passes++
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		done  int
		first error
		wg    sync.WaitGroup
	)
	next := make(chan string)
	for range min(s.o.Jobs, max(len(files), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				ferr := s.syncFile(ctx, p)
				mu.Lock()
				done++
				if ferr != nil {
					retry = append(retry, p)
					if fatal(ferr) && first == nil {
						first = ferr
						cancel()
					}
				}
				n := done
				mu.Unlock()
				if ferr != nil && !fatal(ferr) {
					s.problem(p, fmt.Sprintf("%s: %v (retried later)", p, ferr))
				}
				if s.o.Progress != nil {
					sum := s.Summary()
					s.o.Progress(Progress{Done: n, Total: len(files), Bytes: sum.Bytes, Imported: sum.Imported, Elapsed: time.Since(start), First: firstPass})
				}
				s.saveOrWarn()
			}
		}()
	}
	fed := 0
feed:
	for _, p := range files {
		select {
		case next <- p:
			fed++
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	retry = append(retry, files[fed:]...)
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return retry, first
}

// fatal reports whether an error stops a pass: the node cannot be reached
// or the pass was interrupted. Other errors are the file's own and the
// file is retried later.
func fatal(err error) bool {
	var ue *apiclient.UnreachableError
	return errors.As(err, &ue) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || refusedToken(err)
}

// refusal reports whether the node refused a request for its content (not
// for a transient reason): the entry goes to the dead-letter file.
func refusal(err error) bool {
	for _, st := range []int{http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge} {
		if apiclient.IsStatus(err, st) {
			return true
		}
	}
	return false
}

// save writes the state when it changed, at most once a second unless
// now is set (the end of a pass). A dry run writes nothing.
func (s *Syncer) save(now bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.o.DryRun || !s.dirty || (!now && time.Since(s.saved) < time.Second) {
		return nil
	}
	s.saved = time.Now() // a failed save is tried again a second later, not at once
	if err := saveState(s.o.StatePath, s.files); err != nil {
		return err
	}
	s.dirty = false
	return nil
}

// saveOrWarn saves the state if a second has passed since the last save,
// and tells a failure.
func (s *Syncer) saveOrWarn() {
	if err := s.save(false); err != nil {
		s.problem(s.o.StatePath, fmt.Sprintf("state file %s: %v", s.o.StatePath, err))
	}
}

// saveDue is when a state changed since its last save is to be saved.
func (s *Syncer) saveDue() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saved.Add(time.Second), s.dirty && !s.o.DryRun
}

// problem tells msg once per file until the file's problem changes, and
// reports whether it told it now.
func (s *Syncer) problem(path, msg string) bool {
	s.mu.Lock()
	seen := s.reported[path] == msg
	s.reported[path] = msg
	s.mu.Unlock()
	if !seen {
		s.o.Warn(msg)
	}
	return !seen
}

func (s *Syncer) clearProblem(path string) {
	s.mu.Lock()
	delete(s.reported, path)
	s.mu.Unlock()
}

func (s *Syncer) count(f func(*Summary)) {
	s.mu.Lock()
	f(&s.sum)
	s.mu.Unlock()
}

func (s *Syncer) state(path string) *FileState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fs := s.files[path]; fs != nil {
		c := *fs
		return &c
	}
	return nil
}

func (s *Syncer) setState(path string, fs *FileState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fs == nil {
		if _, ok := s.files[path]; ok {
			delete(s.files, path)
			s.dirty = true
		}
		return
	}
	s.files[path] = fs
	s.dirty = true
}

// syncFile brings the cluster up to date with one file. It returns an
// error only when the cluster could not take what it should (the file is
// retried); problems of the file itself are told and counted.
func (s *Syncer) syncFile(ctx context.Context, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		s.setState(path, nil) // deleted: nothing to sync, and a new file of that name starts afresh
		return nil
	}
	if err != nil {
		s.count(func(c *Summary) { c.Errors++ })
		s.problem(path, fmt.Sprintf("%s: %v", path, err))
		return nil
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// A link may point anywhere (~/.ssh/id_ed25519 as x.jsonl) and its
		// target would be uploaded; pi makes none, and a target inside the
		// synced directories is synced under its own name (docs/PI.md).
		s.problem(path, fmt.Sprintf("%s: a symbolic link: not synced", path))
		return nil
	}
	s.count(func(c *Summary) {
		if !s.seen[path] {
			s.seen[path] = true
			c.Files++
		}
	})
	dev, ino := identity(fi)
	old := s.state(path)
	if old != nil && old.Dev == dev && old.Ino == ino && old.Size == fi.Size() && old.ModTime == fi.ModTime().UnixNano() {
		return nil // unchanged since it was last read
	}
	if fi.Size() > s.o.MaxFileSize {
		// No pi session is this large; a file that is (a sparse file, a
		// log written by something else) would be read into memory whole.
		// problem tells it once, not at every rescan.
		s.problem(path, fmt.Sprintf("%s: larger than --max-file-size %s: not synced", path, size.Format(s.o.MaxFileSize)))
		return nil
	}
	fh, err := os.Open(path)
	if err != nil {
		s.count(func(c *Summary) { c.Errors++ })
		s.problem(path, fmt.Sprintf("%s: %v", path, err))
		return nil
	}
	defer fh.Close()
	// The file opened must be the one Lstat saw: not a link put in its
	// place since. A file replaced since is read at the next pass.
	if ofi, err := fh.Stat(); err != nil || !os.SameFile(fi, ofi) {
		return errors.New("replaced while it was opened")
	}
	r := &countingReaderAt{r: fh, n: &s.read}
	var next *FileState
	same := false
	if old != nil && old.Offset <= fi.Size() {
		if same, err = old.prefixIs(r); err != nil {
			s.count(func(c *Summary) { c.Errors++ })
			s.problem(path, fmt.Sprintf("%s: %v", path, err))
			return nil
		}
	}
	if same {
		next = old
		if next.Stopped == "" {
			err = s.resume(ctx, path, r, fi.Size(), next)
		}
	} else {
		// A new or rewritten file is read whole: it is imported as one
		// request, or compared with the cluster's session line by line.
		data := make([]byte, fi.Size())
		n, rerr := r.ReadAt(data, 0)
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			s.count(func(c *Summary) { c.Errors++ })
			s.problem(path, fmt.Sprintf("%s: %v", path, rerr))
			return nil
		}
		data = data[:n]
		complete := data[:bytes.LastIndexByte(data, '\n')+1]
		if old != nil {
			s.o.Warn(fmt.Sprintf("%s: rewritten since it was synced: comparing it with the cluster's session by entry id", path))
		}
		next, err = s.fresh(ctx, path, complete)
		if old != nil && next != nil && old.SessionID != "" && next.SessionID != old.SessionID {
			// pi recovered a broken file by starting a new session in it.
			s.o.Warn(fmt.Sprintf("%s: now holds session %s (was %s, which stays in the cluster)", path, next.SessionID, old.SessionID))
		}
		r = &countingReaderAt{r: bytes.NewReader(complete), n: new(atomic.Int64)} // the hash below reads what was synced, not the file again
	}
	if next == nil {
		return err
	}
	if herr := next.hashPrefix(r); herr != nil && err == nil {
		err = herr
	}
	next.Dev, next.Ino, next.Size, next.ModTime = dev, ino, fi.Size(), fi.ModTime().UnixNano()
	if err != nil {
		next.Size = -1 // not done: read it again next time
	}
	s.setState(path, next)
	return err
}

// readChunk is how much of a grown file resume reads at once: memory stays
// bounded by it (or by the longest line) however much the file grew.
var readChunk int64 = 4 << 20

// resume sends the lines after the synced prefix, read from the file from
// st.Offset on, a chunk at a time. The first time in this process they
// are compared with the cluster's session, since a crash may have come
// after the cluster took them and before the state said so.
func (s *Syncer) resume(ctx context.Context, path string, r io.ReaderAt, fsize int64, st *FileState) error {
	s.mu.Lock()
	compared := s.compared[path]
	s.mu.Unlock()
	var stored *storedSession
	chunk := readChunk
	for st.Offset < fsize {
		buf := make([]byte, min(chunk, fsize-st.Offset))
		n, err := r.ReadAt(buf, st.Offset)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		buf = buf[:n]
		cut := bytes.LastIndexByte(buf, '\n') + 1
		if cut == 0 {
			if st.Offset+int64(n) >= fsize {
				break // only a line pi has not finished
			}
			chunk *= 2 // a line longer than the chunk
			continue
		}
		if !compared && stored == nil {
			body, err := exportOf(ctx, s.o.Client, st.SessionID)
			if err != nil {
				return err
			}
			e := parseExport(body)
			stored = &e
		}
		if err := s.sendLines(ctx, path, buf[:cut], st.Offset, st, stored); err != nil {
			return err
		}
	}
	if stored != nil {
		s.mu.Lock()
		s.compared[path] = true
		s.mu.Unlock()
	}
	return nil
}

// fresh syncs a file the state knows nothing of (or that was rewritten):
// a session the cluster lacks is imported whole; one it has is compared by
// entry id.
func (s *Syncer) fresh(ctx context.Context, path string, complete []byte) (*FileState, error) {
	lines := completeLines(complete, 0, 1)
	hi := 0
	for hi < len(lines) && blank(lines[hi].body) {
		hi++
	}
	if len(lines) == 0 {
		return nil, nil // no complete line yet: pi has not flushed
	}
	var msg string
	if hi == len(lines) {
		// pi writes its header first: blank lines alone are no file of
		// pi's half written, and pi refuses to open it.
		hi--
		msg = fmt.Sprintf("%s: only blank lines, no pi session header: file not synced (pi refuses to open it)", path)
	}
	h, ok := parseHeader(lines[hi].body)
	if !ok || msg != "" {
		if msg == "" {
			msg = fmt.Sprintf(`%s:%d: not a pi session header (a JSON object with "type":"session" and a string "id"): file not synced`, path, lines[hi].no)
		}
		s.count(func(c *Summary) { c.Errors++ })
		s.problem(path, msg)
		// Stopped, like a file whose header the cluster does not share:
		// told once, looked at again only when it is rewritten (pi
		// never writes to a file it refused).
		return &FileState{Stopped: msg, Offset: lines[hi].end, Lines: lines[hi].no}, nil
	}
	st := &FileState{SessionID: h.id, HeaderHash: hashOf(h.line), Offset: lines[hi].end, Lines: lines[hi].no}
	// The import itself says whether the cluster has the session (409): one
	// request per new file. A dry run asks first instead.
	if s.o.DryRun {
		err := apiclient.Call(ctx, s.o.Client, wire.GetRequest{SessionID: h.id, Consistency: wire.ConsistencyStrong}, nil)
		switch {
		case apiclient.IsStatus(err, http.StatusNotFound):
			return st, s.importFile(ctx, path, complete, lines[hi:], h, st)
		case err != nil:
			return nil, err
		}
	} else {
		err := s.importFile(ctx, path, complete, lines[hi:], h, st)
		switch {
		case err == nil:
			return st, nil
		case !apiclient.IsStatus(err, http.StatusConflict):
			return nil, err // nothing is known to be in the cluster: no state
		}
		s.mu.Lock()
		ours := s.unanswered[path]
		s.mu.Unlock()
		return s.reconcile(ctx, path, complete, lines[hi:], h, st, ours)
	}
	return s.reconcile(ctx, path, complete, lines[hi:], h, st, false)
}

// importFile imports the file's complete lines (from the header on) as
// one session. A file too large for one request (NATS's max_payload is
// 1 MiB by default) is imported as a head that fits, halved until it does,
// and the rest appended: the session is then visible before it is whole,
// which a single import avoids wherever the transport allows it.
func (s *Syncer) importFile(ctx context.Context, path string, complete []byte, lines []line, h header, st *FileState) error {
	k := len(lines) // lines[:k] are sent
	for !s.o.DryRun {
		body, err := s.o.Client.Do(ctx, wire.ImportRequest{File: complete[:lines[k-1].end]})
		s.mu.Lock()
		switch {
		case err == nil:
			delete(s.unanswered, path)
		case !apiclient.IsStatus(err, http.StatusConflict) && !refusal(err):
			// The node may have applied it: a 409 of a retry is then
			// this import (see reconcile).
			s.unanswered[path] = true
		}
		s.mu.Unlock()
		if apiclient.IsStatus(err, http.StatusRequestEntityTooLarge) && k > 1 {
			budget := lines[k-1].end / 2
			for k = 1; k < len(lines) && lines[k].end <= budget; k++ {
			}
			continue
		}
		switch {
		case apiclient.IsStatus(err, http.StatusConflict):
			return err
		case err != nil && refusal(err):
			s.refuseFile(path, lines, h.id, st, err)
			return nil
		case err != nil:
			return err
		}
		var r struct {
			Skipped []struct {
				Line   int    `json:"line"`
				Reason string `json:"reason"`
			} `json:"skipped"`
		}
		if json.Unmarshal(body, &r) == nil {
			for _, sk := range r.Skipped {
				s.o.Warn(fmt.Sprintf("%s:%d: skipped, as pi skips it: %s", path, sk.Line, sk.Reason))
			}
		}
		break
	}
	st.Offset, st.Lines, st.LastID = lines[k-1].end, lines[k-1].no, lastEntryID(lines[:k])
	s.count(func(c *Summary) { c.Imported++; c.Bytes += lines[k-1].end })
	s.mu.Lock()
	s.compared[path] = true // this process sent it all
	s.mu.Unlock()
	if k < len(lines) {
		return s.sendLines(ctx, path, complete, 0, st, nil)
	}
	return nil
}

// refuseFile records a file the cluster does not take at all (its header
// is refused): its header line in the dead-letter file, and the file
// stopped until it is rewritten.
func (s *Syncer) refuseFile(path string, lines []line, sid string, st *FileState, err error) {
	s.refuse(path, lines[0], sid, "", err)
	last := lines[len(lines)-1]
	st.Stopped, st.Offset, st.Lines = err.Error(), last.end, last.no
}

func lastEntryID(lines []line) string {
	for k := len(lines) - 1; k >= 0; k-- {
		if kind, id := classify(lines[k].body); kind == kindEntry {
			return id
		}
	}
	return ""
}

// reconcile compares a file (from its header line on) with the session the
// cluster has: the header must be the same, entries the cluster has are
// skipped (refused when their content differs), the rest appended. With
// ours (this process's import of the file went unanswered), a session
// whose entries are all the file's is counted as imported, not as known.
func (s *Syncer) reconcile(ctx context.Context, path string, complete []byte, lines []line, h header, st *FileState, ours bool) (*FileState, error) {
	body, err := exportOf(ctx, s.o.Client, h.id)
	if err != nil {
		return nil, err // an unanswered import stays so: the retry judges it again
	}
	s.mu.Lock()
	delete(s.unanswered, path) // judged below, once
	s.mu.Unlock()
	stored := parseExport(body)
	last := lines[len(lines)-1]
	stop := func(why string) (*FileState, error) {
		s.count(func(c *Summary) { c.Conflicts++ })
		s.problem(path, fmt.Sprintf("%s:%d: %s: not merged", path, lines[0].no, why))
		st.Stopped, st.Offset, st.Lines = why, last.end, last.no
		return st, nil
	}
	if h.version < 3 {
		// The cluster holds the session as pi migrates it; this file is
		// older than that, and pi rewrites it when it opens it.
		s.problem(path, fmt.Sprintf("%s:%d: a version-%d file of session %s, which the cluster has (migrated): not compared until pi rewrites it", path, lines[0].no, h.version, h.id))
		st.Offset, st.Lines = last.end, last.no
		return st, nil
	}
	if !bytes.Equal(stored.header, h.line) {
		return stop(fmt.Sprintf("the header differs from the one of session %s in the cluster", h.id))
	}
	known, total := 0, 0
	for _, l := range lines[1:] {
		if k, id := classify(l.body); k == kindEntry {
			total++
			if _, ok := stored.entries[id]; ok {
				known++
			}
		}
	}
	if total > 0 && known == 0 && len(stored.entries) > 0 {
		return stop(fmt.Sprintf("none of the %d entries is among the %d of session %s in the cluster (new ids: pi migrated a version-1 file?)", total, len(stored.entries), h.id))
	}
	if ours && known == len(stored.entries) {
		stored.ours = true
		s.count(func(c *Summary) { c.Imported++ })
	}
	if err := s.sendLines(ctx, path, complete, 0, st, &stored); err != nil {
		return st, err
	}
	s.mu.Lock()
	s.compared[path] = true
	s.mu.Unlock()
	return st, nil
}

// sendLines appends the complete lines after st.Offset, in batches, and
// moves st past each line once it is in the cluster, refused into the
// dead-letter file, or skipped as pi skips it. With stored, entries the
// cluster has are skipped instead of sent. buf is the file from offset
// base on (base <= st.Offset).
func (s *Syncer) sendLines(ctx context.Context, path string, buf []byte, base int64, st *FileState, stored *storedSession) error {
	var (
		batch      []line
		ids        []string
		size       int
		prev, seen line // the line before this one; the last line
	)
	// flush sends the batch and moves st past upTo, the batch's last line
	// or a line skipped after it.
	flush := func(upTo line) error {
		if len(batch) > 0 {
			if err := s.appendBatch(ctx, path, st.SessionID, batch, ids); err != nil {
				return err
			}
			st.LastID = ids[len(ids)-1]
		}
		batch, ids, size = batch[:0], ids[:0], 0
		st.Offset, st.Lines = upTo.end, upTo.no
		return nil
	}
	// refuse dead-letters a line once: the batch before it goes first, so
	// a retry of that batch cannot bring the line back.
	refuse := func(l line, id string, why error) error {
		if len(batch) > 0 {
			if err := flush(prev); err != nil {
				return err
			}
		}
		s.refuse(path, l, st.SessionID, id, why)
		return nil
	}
	for _, l := range completeLinesAt(buf[st.Offset-base:], st.Offset, st.Lines+1) {
		prev, seen = seen, l
		kind, id := classify(l.body)
		var err error
		switch kind {
		case kindEntry:
			if have, ok := stored.entry(id); ok {
				// Space around the object (a CR of a CRLF line) is not
				// content: an append stores the line without it.
				if bytes.Equal(bytes.TrimSpace(have), bytes.TrimSpace(l.body)) {
					s.count(func(c *Summary) {
						if stored.ours {
							c.Bytes += int64(len(l.body)) + 1 // this process's own import
						} else {
							c.Known++
						}
					})
				} else {
					err = refuse(l, id, errors.New("the cluster has an entry with this id and other content"))
				}
				break
			}
			if len(batch) > 0 && (len(batch) == maxBatchEntries || size+len(l.body) > maxBatchBytes) {
				if err := flush(prev); err != nil {
					return err
				}
			}
			batch, ids, size = append(batch, l), append(ids, id), size+len(l.body)
			continue
		case kindHeader:
			if hashOf(l.body) != st.HeaderHash {
				s.o.Warn(fmt.Sprintf("%s:%d: a second session header, not the first one: ignored, as pi ignores it", path, l.no))
			}
		case kindMalformed:
			s.o.Warn(fmt.Sprintf("%s:%d: not a JSON object: skipped, as pi skips it", path, l.no))
		case kindNoID:
			err = refuse(l, "", errors.New("an entry without an id cannot be sent so that a retry is recognized"))
		}
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			st.Offset, st.Lines = l.end, l.no
		}
	}
	if len(batch) > 0 {
		return flush(seen) // the lines skipped after the batch are resolved with it
	}
	return nil
}

// appendBatch appends entries with their own ids, so a retry of a batch
// whose reply was lost is recognized and stored once. A batch the node
// refuses is sent entry by entry, and the entries it still refuses go to
// the dead-letter file.
func (s *Syncer) appendBatch(ctx context.Context, path, sid string, batch []line, ids []string) error {
	n := 0
	for _, l := range batch {
		n += len(l.body)
	}
	if s.o.DryRun {
		s.count(func(c *Summary) { c.Appended += len(batch); c.Bytes += int64(n) })
		return nil
	}
	entries := make([]json.RawMessage, len(batch))
	for k, l := range batch {
		entries[k] = l.body
	}
	// Orphans: a line whose parent pi left out of the file (a 0.73.1 fork
	// drops labels from the path) is a root to pi and stored as one.
	_, err := s.o.Client.Do(ctx, wire.AppendRequest{SessionID: sid, Entries: entries, Orphans: true})
	switch {
	case err == nil:
		s.count(func(c *Summary) { c.Appended += len(batch); c.Bytes += int64(n) })
		return nil
	case !refusal(err):
		return err
	case len(batch) == 1:
		s.refuse(path, batch[0], sid, ids[0], err)
		return nil
	}
	// Too large for the transport: halves. Refused for its content: one
	// by one, so that only the entries at fault are left out.
	step := 1
	if apiclient.IsStatus(err, http.StatusRequestEntityTooLarge) {
		step = (len(batch) + 1) / 2
	}
	for k := 0; k < len(batch); k += step {
		end := min(k+step, len(batch))
		if err := s.appendBatch(ctx, path, sid, batch[k:end], ids[k:end]); err != nil {
			return err
		}
	}
	return nil
}

// deadLetter is one line of the dead-letter file.
type deadLetter struct {
	Time      string `json:"time"`
	File      string `json:"file"`
	Line      int    `json:"line"`
	SessionID string `json:"sessionId"`
	EntryID   string `json:"entryId,omitempty"`
	Error     string `json:"error"`
	Entry     string `json:"entry"` // the line as in the file
}

// refuse records a line the cluster does not take: in the dead-letter
// file (fsynced), in the log, and in the count. It is never sent again.
func (s *Syncer) refuse(path string, l line, sid, id string, why error) {
	s.count(func(c *Summary) { c.Refused++ })
	s.o.Warn(fmt.Sprintf("%s:%d: refused by the cluster (in %s): %v", path, l.no, s.o.DeadLetterPath, why))
	if s.o.DryRun {
		return
	}
	rec, _ := json.Marshal(deadLetter{Time: time.Now().UTC().Format(time.RFC3339Nano), File: path, Line: l.no, SessionID: sid, EntryID: id, Error: why.Error(), Entry: string(l.body)})
	s.mu.Lock()
	defer s.mu.Unlock()
	err := appendSync(s.o.DeadLetterPath, append(rec, '\n'))
	if err != nil {
		s.o.Warn(fmt.Sprintf("dead-letter file %s: %v", s.o.DeadLetterPath, err))
	}
}

func appendSync(path string, rec []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(rec); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
