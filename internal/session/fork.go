package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// ForkOf is what the header record of a fork by reference carries beside
// pi's header line (which names the parent in parentSession, as pi does):
// the session and entry it forked at, and how. Its records are that header,
// the labels of the path written again (tree.Fork's tail) and its own
// entries; the path itself is read from the parent (Materialize). Seq is the
// parent's last sequence at the fork: the path's records are all at or
// below it, so a reader needs no more of the parent.
type ForkOf struct {
	Session string `json:"session"`
	EntryID string `json:"entryId"`
	Seq     uint64 `json:"seq"`
	Pi11    bool   `json:"pi11,omitempty"` // re-chained over dropped labels (tree.Fork11)
	// Depth is how many forks by reference lead to this one, itself
	// included (1: its parent is a plain session), as the forking node
	// knew it.
	Depth int `json:"depth,omitempty"`
}

// MaxForkDepth is how many forks by reference a chain may hold (a fork of
// a fork of …): reading a fork from the log reads every session up the
// chain, so a fork of a session this deep copies instead. A node knows a
// session's depth from the header it applied; one restored from a
// snapshot counts as a plain session, so a chain can grow past this, and
// reads allow maxReadDepth.
const MaxForkDepth = 8

// maxReadDepth bounds a read's recursion; sessions cannot form a cycle (a
// parent is stored before its fork), so it only stops a corrupt log.
const maxReadDepth = 1000

// Valid checks a ForkOf before it is stored or after it is read.
func (f *ForkOf) Valid() error {
	if err := ValidSessionID(f.Session); err != nil {
		return wire.Invalid("forkOf.session", err.Error())
	}
	if f.EntryID == "" || strings.ContainsAny(f.EntryID, "\r\n") {
		return wire.Invalid("forkOf.entryId", "must be an entry id")
	}
	if f.Seq == 0 {
		return wire.Invalid("forkOf.seq", "must be the parent's last sequence")
	}
	return nil
}

// EncodeForkOf is the value of a fork's Pi-Fork-Of message header.
func EncodeForkOf(f *ForkOf) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// DecodeForkOf reads a Pi-Fork-Of message header.
func DecodeForkOf(v string) (*ForkOf, error) {
	var f ForkOf
	if err := json.Unmarshal([]byte(v), &f); err != nil {
		return nil, fmt.Errorf("%w: Pi-Fork-Of: %v", wire.ErrInvalid, err)
	}
	if err := f.Valid(); err != nil {
		return nil, err
	}
	return &f, nil
}

// InheritType is the record type of the lines a fork by reference
// inherits, written into the fork before its parent is erased or archived
// (Inherit): from then on the fork reads them instead of the parent. Its
// records are ignored everywhere else, as pi never sees them: they carry
// lines that are already part of the fork.
const InheritType = "_inherit"

// IsInherit reports whether r is one of a fork's inherited-lines records.
func (r Record) IsInherit() bool { return r.Type == InheritType }

// IsMarker reports whether r is a record of sessionlog's own (an
// abandonment marker, inherited lines) rather than a line of the session.
func (r Record) IsMarker() bool { return r.IsAbandon() || r.IsInherit() }

// inheritChunk bounds one inherit record's data, under every log's record
// limit (1 MiB by default).
const inheritChunk = 512 << 10

// InheritRecords are the records that carry path, a fork's inherited
// lines, with seqs, their sequences in the session they were stored in (0
// where unknown: readers then give them the fork's header sequence):
// chunks of lines "<seq> <line>" joined by newlines (a JSONL line holds no
// newline), each with the id "_inherit.K.N" (K of N), so that a second
// writer of the same lines conflicts instead of adding a copy. A line
// longer than a chunk has one of its own.
func InheritRecords(path *tree.Session, seqs []uint64) []Record {
	var chunks [][]byte
	var cur []byte
	for i := range path.Len() {
		raw := path.Entry(i).Raw
		if len(cur) > 0 && len(cur)+22+len(raw) > inheritChunk {
			chunks, cur = append(chunks, cur), nil
		}
		if len(cur) > 0 {
			cur = append(cur, '\n')
		}
		var seq uint64
		if i < len(seqs) {
			seq = seqs[i]
		}
		cur = append(strconv.AppendUint(cur, seq, 10), ' ')
		cur = append(cur, raw...)
	}
	if len(cur) > 0 || len(chunks) == 0 {
		chunks = append(chunks, cur)
	}
	recs := make([]Record, len(chunks))
	for k, c := range chunks {
		recs[k] = Record{Type: InheritType, ID: fmt.Sprintf("%s.%d.%d", InheritType, k+1, len(chunks)), Data: c}
	}
	return recs
}

// Inherited returns the lines a fork's inherit records carry with their
// sequences (0: unknown), and whether it holds a whole set of them (the
// first whole set, if a race wrote two).
func Inherited(recs []Stored) ([][]byte, []uint64, bool) {
	parts := map[int][]byte{}
	n := 0
	for _, r := range recs {
		if !r.IsInherit() {
			continue
		}
		k, of, ok := inheritPart(r.ID)
		if !ok || (n != 0 && of != n) {
			continue
		}
		n = of
		if _, dup := parts[k]; !dup {
			parts[k] = r.Data
		}
		if len(parts) == n {
			break
		}
	}
	if n == 0 || len(parts) != n {
		return nil, nil, false
	}
	var lines [][]byte
	var seqs []uint64
	for k := 1; k <= n; k++ {
		if len(parts[k]) == 0 {
			continue // an empty path
		}
		for _, l := range bytes.Split(parts[k], []byte{'\n'}) {
			num, line, _ := bytes.Cut(l, []byte{' '})
			seq, _ := strconv.ParseUint(string(num), 10, 64)
			lines, seqs = append(lines, line), append(seqs, seq)
		}
	}
	return lines, seqs, true
}

// InheritLines are the lines one inherit record carries (a part of the
// set Inherited puts together).
func InheritLines(r Record) [][]byte {
	if !r.IsInherit() || len(r.Data) == 0 {
		return nil
	}
	var out [][]byte
	for _, l := range bytes.Split(r.Data, []byte{'\n'}) {
		_, line, _ := bytes.Cut(l, []byte{' '})
		out = append(out, line)
	}
	return out
}

func inheritPart(id string) (k, of int, ok bool) {
	rest, ok := strings.CutPrefix(id, InheritType+".")
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, 0, false
	}
	k, err1 := strconv.Atoi(a)
	of, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || k < 1 || k > of {
		return 0, 0, false
	}
	return k, of, true
}

// Reader is the read side of a Log, which materialising a fork needs.
type Reader interface {
	Read(ctx context.Context, session string, afterSeq uint64) ([]Stored, error)
}

// BuildFrom is Build for any session, forks by reference included: a
// fork's path comes from its inherit records when it has them, else from
// its parent, read through r (recursively, MaxForkDepth deep). The path's
// entries take the fork's header sequence. A fork whose parent is gone
// without inherit records is ErrUnavailable, naming the parent.
func BuildFrom(ctx context.Context, r Reader, recs []Stored) (*tree.Session, []uint64, error) {
	return buildFrom(ctx, r, recs, 0)
}

func buildFrom(ctx context.Context, r Reader, recs []Stored, depth int) (*tree.Session, []uint64, error) {
	if len(recs) == 0 || !recs[0].IsHeader() {
		return nil, nil, fmt.Errorf("%w: the log holds no header for this session", wire.ErrInvalid)
	}
	if Incomplete(recs) {
		return nil, nil, fmt.Errorf("session %s: %w (still being written in several batches, or abandoned)", recs[0].Session, wire.ErrNotFound)
	}
	h, err := tree.ParseHeader(recs[0].Data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: header at seq %d: %v", wire.ErrInvalid, recs[0].Seq, err)
	}
	s := tree.NewSession(h)
	var seqs []uint64
	if f := recs[0].Fork; f != nil {
		if s, seqs, err = forkBase(ctx, r, recs, h, f, depth); err != nil {
			return nil, nil, err
		}
	}
	s.Grow(len(recs) - 1)
	seqs = slices.Grow(seqs, len(recs)-1)
	for _, r := range recs[1:] {
		if r.IsHeader() || r.IsMarker() {
			continue // a repeated header is ignored, as pi does
		}
		e, err := tree.ParseEntry(r.Data)
		if err != nil {
			continue // not an entry pi could read; the Store counts these
		}
		s.Append(e)
		seqs = append(seqs, r.Seq)
	}
	return s, seqs, nil
}

// forkBase is a fork's header with its inherited path, and the path's
// sequences: in the sessions the lines were stored in, so that they
// increase along the path and stay below the fork's header (reads page by
// sequence); the header's where unknown.
func forkBase(ctx context.Context, r Reader, recs []Stored, h tree.Header, f *ForkOf, depth int) (*tree.Session, []uint64, error) {
	if lines, seqs, ok := Inherited(recs); ok {
		s := tree.NewSession(h)
		for i, l := range lines {
			e, err := tree.ParseEntry(l)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: session %s: inherited line %d: %v", wire.ErrInvalid, h.ID, i+1, err)
			}
			s.Append(e)
		}
		return s, PathSeqs(seqs, recs[0].Seq), nil
	}
	if r == nil {
		return nil, nil, fmt.Errorf("session %s is a fork of %s, which this reader cannot read: %w", h.ID, f.Session, wire.ErrUnavailable)
	}
	if depth >= maxReadDepth {
		return nil, nil, fmt.Errorf("%w: session %s: more than %d forks by reference in a row", wire.ErrInvalid, h.ID, maxReadDepth)
	}
	precs, err := r.Read(ctx, f.Session, 0)
	if errors.Is(err, wire.ErrNotFound) {
		return nil, nil, fmt.Errorf("session %s is a fork of %s, which is gone without leaving it its path: %w", h.ID, f.Session, wire.ErrUnavailable)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: reading its parent %s: %w", h.ID, f.Session, err)
	}
	// Up to the fork: what the parent gained since is not the fork's,
	// but its own inherited lines are (a parent that is itself a fork by
	// reference may have received them later).
	kept := precs[:0:0]
	for _, pr := range precs {
		if pr.Seq <= f.Seq || pr.IsInherit() {
			kept = append(kept, pr)
		}
	}
	pt, pseqs, err := buildFrom(ctx, r, kept, depth+1)
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: its parent %s: %w", h.ID, f.Session, err)
	}
	t, seqs, err := ForkPath(pt, pseqs, f, h)
	return t, PathSeqs(seqs, recs[0].Seq), err
}

// PathSeqs are the sequences a fork whose header is at header gives the n
// = len(parent) entries of its path: sequences that increase and stay
// below its header, as every reader of a session expects (entries are
// paged by sequence; a wait for any of them is over once the header is
// applied). They are the parent's own where those qualify (a parent in the
// same stream, stored before the fork), else the n sequences just before
// the header (a parent in another shard's stream, whose qualified
// sequences may be higher; or unknown, 0), else, for a header too early in
// its stream, the header's own (Service.Entries never splits such a run).
func PathSeqs(parent []uint64, header uint64) []uint64 {
	n := len(parent)
	ok := n == 0 || parent[n-1] < header
	for i := range parent {
		if parent[i] == 0 || i > 0 && parent[i] <= parent[i-1] {
			ok = false
		}
	}
	if ok {
		return parent
	}
	out := make([]uint64, n)
	for i := range out {
		if header > uint64(n) {
			out[i] = header - uint64(n-i)
		} else {
			out[i] = header
		}
	}
	return out
}

// ForkPath is the path a fork by reference inherits from its parent's tree,
// and the path's sequences taken from the parent's (seqs; nil or 0:
// unknown). PathSeqs makes them the fork's.
func ForkPath(parent *tree.Session, seqs []uint64, f *ForkOf, h tree.Header) (*tree.Session, []uint64, error) {
	i, ok := parent.Index(f.EntryID)
	if !ok {
		return nil, nil, fmt.Errorf("%w: session %s forks %s at entry %q, which it does not hold", wire.ErrInvalid, h.ID, parent.Header.ID, f.EntryID)
	}
	t, err := tree.ForkPath(parent, i, h, f.Pi11)
	if err != nil {
		return nil, nil, err
	}
	out := make([]uint64, 0, t.Len())
	for _, j := range parent.PathIndices(i) {
		if parent.Entry(int(j)).Kind != tree.KindLabel {
			var seq uint64 // unknown
			if int(j) < len(seqs) {
				seq = seqs[j]
			}
			out = append(out, seq)
		}
	}
	if len(out) != t.Len() {
		return nil, nil, fmt.Errorf("fork %s: %d sequences for a path of %d", h.ID, len(out), t.Len())
	}
	return t, out, nil
}

// ForkRegistry keeps which forks by reference each session has, so that a
// parent that goes (erased, archived) gives them their path first
// (InheritForks). internal/jetstream keeps it in a KV bucket beside the
// archive.
type ForkRegistry interface {
	// RecordFork notes fork as a fork of parent; a fork records itself
	// before its header is stored.
	RecordFork(ctx context.Context, parent, fork string) error
	// Forks lists what RecordFork noted of parent, as the registry's
	// leader has it.
	Forks(ctx context.Context, parent string) ([]string, error)
	// ForgetForks removes parent's notes.
	ForgetForks(ctx context.Context, parent string) error
}

// InheritForks gives every fork by reference of parent that reg knows and
// that does not hold its path yet the path it inherits from parent's tree
// (parentTree, called only when there are forks): as inherit records appended to the fork (InheritRecords), after
// which the fork reads nothing of parent. It returns how many forks it
// wrote to. A fork that is not in log (not stored yet, erased, archived:
// an archived copy is written whole) is left alone.
//
// Who removes a session calls it before, while the parent can still be
// read, and again after, with the tree it removed, for a fork that was
// recorded meanwhile; then ForgetForks. A fork checks that its parent is
// still in the log after its header is stored, and writes its path itself
// when it is not: one of the two always sees the other.
func InheritForks(ctx context.Context, log Log, reg ForkRegistry, parent string, parentTree func(context.Context) (*tree.Session, []uint64, error)) (int, error) {
	forks, err := reg.Forks(ctx, parent)
	if err != nil || len(forks) == 0 {
		if err != nil {
			err = fmt.Errorf("the forks of %s: %w", parent, err)
		}
		return 0, err
	}
	pt, seqs, err := parentTree(ctx)
	if err != nil {
		return 0, fmt.Errorf("the forks of %s: its tree: %w", parent, err)
	}
	n := 0
	for _, f := range forks {
		did, err := Inherit(ctx, log, pt, seqs, f)
		if err != nil {
			return n, fmt.Errorf("fork %s of %s: %w", f, parent, err)
		}
		if did {
			n++
		}
	}
	return n, nil
}

// LogTree reads sid's tree and its sequences from log, for InheritForks.
func LogTree(log Log, sid string) func(context.Context) (*tree.Session, []uint64, error) {
	return func(ctx context.Context) (*tree.Session, []uint64, error) {
		recs, err := log.Read(ctx, sid, 0)
		if err != nil {
			return nil, nil, err
		}
		return BuildFrom(ctx, log, recs)
	}
}

// Inherit appends to fork, a fork by reference of pt's session (seqs: its
// entries' sequences, or nil), the path it inherits, unless it holds it
// already (or is not such a fork, or not in log). It reports whether it
// wrote.
func Inherit(ctx context.Context, log Log, pt *tree.Session, seqs []uint64, fork string) (bool, error) {
	for range 10 {
		recs, err := log.Read(ctx, fork, 0)
		if errors.Is(err, wire.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		f := recs[0].Fork
		if !recs[0].IsHeader() || f == nil || f.Session != pt.Header.ID {
			return false, nil
		}
		if _, _, ok := Inherited(recs); ok {
			return false, nil
		}
		h, err := tree.ParseHeader(recs[0].Data)
		if err != nil {
			return false, fmt.Errorf("%w: header: %v", wire.ErrInvalid, err)
		}
		path, pseqs, err := ForkPath(pt, seqs, f, h)
		if err != nil {
			return false, err
		}
		_, err = log.Append(ctx, fork, recs[len(recs)-1].Seq, InheritRecords(path, pseqs))
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, wire.ErrConflict), errors.Is(err, wire.ErrUnavailable):
			// Written to meanwhile, or by another writer of the same path
			// (their ids conflict), or unknown: look again.
		default:
			return false, err
		}
	}
	return false, fmt.Errorf("%w: written to faster than its path could be added", wire.ErrConflict)
}
