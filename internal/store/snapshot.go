package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/pifleet/sessionlog/internal/seal"
)

// A snapshot is the Store's state written to its data directory, so that a
// restarted node serves every session at once instead of after re-reading
// the whole stream (a filtered read of one session in a large interleaved
// stream takes most of a second; reading one block here, a millisecond).
//
// Layout (little endian):
//
//	magic "PISNAP01"
//	blocks, one per session, each: u32 length, u32 crc32c of the block, block
//	index: u32 count, then per session its catalog record and block position
//	trailer: u64 applied, u64 index offset, u32 crc32c of the index, magic
//
// A block is: header seq, header line, entry count, then (seq, line) pairs.
// The index is the catalog: per session its ids, sequences, times, cwd,
// parent, name and labels, then per session, in the same order, the first
// user message's preview and the latest entry timestamp, which a listing
// needs of sessions whose blocks were never read. These come last so that
// a node of a version without them reads the file (a rollback), and a
// file without them (written by such a node) leaves them unknown until
// the sessions are read; the next snapshot fills them in.
// Blocks are read lazily, when a session is first used; the index is read at
// start. Every block and the index carry a checksum: a torn or corrupt file
// is refused as a whole and the Store rebuilds from the log.
//
// With encryption at rest (Options.Seal) the file begins and ends with
// sealedMagic, and each block's payload and the index are sealed (package
// seal: AES-256-GCM; a block bound to its session's id, the index to
// "index"): the length and checksum frame the sealed bytes. What stays in
// the clear is the frame, the applied sequence and the index's offset.

const (
	snapMagic   = "PISNAP01"
	sealedMagic = "PISNAPS1" // of the same length
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errSnapshot marks an unusable snapshot file (the Store then rebuilds).
var errSnapshot = errors.New("bad snapshot")

// errPlain is a plain snapshot found while encryption is on: it is removed.
var errPlain = errors.New("not encrypted, and encryption at rest is on")

// snapEntry is a session's index record: its catalog and where its block is.
type snapEntry struct {
	id                 string
	off                int64 // of the block's length field
	size               uint32
	headerSeq, lastSeq uint64
	created, modified  time.Time
	entries            uint32
	cwd, parentSession string
	name               string
	hasName            bool
	labels             map[string]string
	first              *string // the first user message's preview, when firstKnown
	firstKnown         bool
	lastEntry          time.Time // Doc.LastEntry; zero when unknown
}

// snapFile is an open snapshot: its index and the file to read blocks from.
type snapFile struct {
	path     string
	f        *os.File
	applied  uint64
	identity string // of the log it was taken from (see Identifier)
	index    []snapEntry
	ring     *seal.Ring // its blocks are sealed with (nil: plain)
}

// snapSession is what the writer needs of one session.
type snapSession struct {
	meta   snapEntry // catalog (off/size filled by the writer)
	header []byte
	seqs   []uint64
	lines  [][]byte
}

// writeSnapshot writes sessions to dir/store-<applied>.snap (through a temp
// file, fsynced, then renamed: a crash leaves the previous snapshot) and
// returns the index of the new file. With ring, the blocks and index are
// sealed.
func writeSnapshot(dir string, applied uint64, identity string, ring *seal.Ring, next func(yield func(*snapSession) error) error) (string, []snapEntry, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	tmp, err := os.CreateTemp(dir, "store-*.snap.tmp")
	if err != nil {
		return "", nil, err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	defer tmp.Close()
	w := bufio.NewWriterSize(tmp, 1<<20)
	magic := snapMagic
	if ring != nil {
		magic = sealedMagic
	}
	off := int64(len(magic))
	if _, err := w.WriteString(magic); err != nil {
		return "", nil, err
	}
	var index []snapEntry
	var block, sealed []byte
	err = next(func(s *snapSession) error {
		block = appendBlock(block[:0], s.meta.headerSeq, s.header, s.seqs, s.lines)
		out := block
		if ring != nil {
			sealed = sealBlock(sealed[:0], ring, block, s.meta.id)
			out = sealed
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
		m := s.meta
		m.off, m.size = off, uint32(len(out)-8)
		index = append(index, m)
		off += int64(len(out))
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	idx := encodeIndex(identity, index)
	if ring != nil {
		idx = ring.Seal(nil, idx, []byte(indexName))
	}
	var trailer []byte
	trailer = binary.LittleEndian.AppendUint64(trailer, applied)
	trailer = binary.LittleEndian.AppendUint64(trailer, uint64(off))
	trailer = binary.LittleEndian.AppendUint32(trailer, crc32.Checksum(idx, crcTable))
	trailer = append(trailer, magic...)
	for _, b := range [][]byte{idx, trailer} {
		if _, err := w.Write(b); err != nil {
			return "", nil, err
		}
	}
	if err := w.Flush(); err != nil {
		return "", nil, err
	}
	if err := tmp.Sync(); err != nil {
		return "", nil, err
	}
	if err := tmp.Close(); err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, fmt.Sprintf("store-%020d.snap", applied))
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", nil, err
	}
	if d, err := os.Open(dir); err == nil { // make the rename durable
		_ = d.Sync()
		_ = d.Close()
	}
	return path, index, nil
}

// appendBlock appends one session's block with its length and checksum
// in front (8 bytes): what readBlock reads at the block's offset.
func appendBlock(dst []byte, headerSeq uint64, header []byte, seqs []uint64, lines [][]byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, 8)...)
	dst = binary.LittleEndian.AppendUint64(dst, headerSeq)
	dst = appendBytes(dst, header)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(lines)))
	for k, l := range lines {
		dst = binary.LittleEndian.AppendUint64(dst, seqs[k])
		dst = appendBytes(dst, l)
	}
	block := dst[start+8:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(block)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(block, crcTable))
	return dst
}

// indexName is what a sealed index is bound to.
const indexName = "index"

// sealBlock appends to dst block (as appendBlock framed it) with its
// payload sealed under the session's id, framed again.
func sealBlock(dst []byte, ring *seal.Ring, block []byte, id string) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, 8)...)
	dst = ring.Seal(dst, block[8:], []byte(id))
	payload := dst[start+8:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, crcTable))
	return dst
}

func appendBytes(b, v []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func encodeIndex(identity string, index []snapEntry) []byte {
	return appendListing(encodeCatalog(identity, index), index)
}

// encodeCatalog is the index without its previews and entry times (as
// files of an earlier version have it).
func encodeCatalog(identity string, index []snapEntry) []byte {
	b := appendString(nil, identity)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(index)))
	for _, e := range index {
		b = appendString(b, e.id)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.off))
		b = binary.LittleEndian.AppendUint32(b, e.size)
		b = binary.LittleEndian.AppendUint64(b, e.headerSeq)
		b = binary.LittleEndian.AppendUint64(b, e.lastSeq)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.created.UnixNano()))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.modified.UnixNano()))
		b = binary.LittleEndian.AppendUint32(b, e.entries)
		b = appendString(b, e.cwd)
		b = appendString(b, e.parentSession)
		flag := byte(0)
		if e.hasName {
			flag = 1
		}
		b = append(b, flag)
		b = appendString(b, e.name)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(e.labels)))
		for k, v := range e.labels {
			b = appendString(b, k)
			b = appendString(b, v)
		}
	}
	return b
}

// Each session's preview in the index: unknown, none, or a text.
const (
	previewUnknown byte = iota
	previewNone
	previewText
)

// appendListing appends the index's second part: each session's preview
// and latest entry timestamp (0 when unknown).
func appendListing(b []byte, index []snapEntry) []byte {
	for _, e := range index {
		switch {
		case !e.firstKnown:
			b = append(b, previewUnknown)
		case e.first == nil:
			b = append(b, previewNone)
		default:
			b = append(b, previewText)
			b = appendString(b, *e.first)
		}
		var last int64
		if !e.lastEntry.IsZero() {
			last = e.lastEntry.UnixNano()
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(last))
	}
	return b
}

// reader decodes the index and blocks; any short read is errSnapshot.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errSnapshot
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
func (r *reader) u32() uint32 {
	if v := r.take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}
func (r *reader) u64() uint64 {
	if v := r.take(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}
func (r *reader) bytes() []byte { return r.take(int(r.u32())) }
func (r *reader) str() string   { return string(r.bytes()) }

// openSnapshot opens the newest snapshot in dir and reads its index. It
// returns (nil, nil) when there is none. With ring, only a sealed file is
// read; without, only a plain one.
func openSnapshot(dir string, ring *seal.Ring) (*snapFile, error) {
	paths, _ := filepath.Glob(filepath.Join(dir, "store-*.snap"))
	if len(paths) == 0 {
		return nil, nil
	}
	path := paths[len(paths)-1] // zero-padded applied seq: the newest sorts last
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	sf, err := readIndex(f, ring)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sf.path = path
	return sf, nil
}

// removePlainSnapshots removes the unencrypted snapshots in dir: with
// encryption at rest turned on, they are plain text on disk that nothing
// will read (the Store rebuilds from the log, then writes a sealed one).
func removePlainSnapshots(dir string, log *slog.Logger) {
	paths, _ := filepath.Glob(filepath.Join(dir, "store-*.snap"))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		head := make([]byte, len(snapMagic))
		_, err = io.ReadFull(f, head)
		f.Close()
		if err == nil && string(head) == sealedMagic {
			continue
		}
		if err := os.Remove(p); err != nil {
			log.Warn("an unencrypted snapshot cannot be removed", "path", p, "err", err)
			continue
		}
		log.Info("removed an unencrypted snapshot: encryption at rest is on (the Store rebuilds from the log)", "path", p)
	}
}

func readIndex(f *os.File, ring *seal.Ring) (*snapFile, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	const trailerLen = 8 + 8 + 4 + len(snapMagic)
	size := st.Size()
	if size < int64(len(snapMagic)+trailerLen) {
		return nil, fmt.Errorf("%w: %d bytes", errSnapshot, size)
	}
	tr := make([]byte, trailerLen)
	if _, err := f.ReadAt(tr, size-int64(trailerLen)); err != nil {
		return nil, err
	}
	switch magic := string(tr[20:]); {
	case magic == sealedMagic && ring == nil:
		return nil, fmt.Errorf("%w: encrypted, and this node has no key (--encryption-key-file)", errSnapshot)
	case magic == snapMagic && ring != nil:
		return nil, fmt.Errorf("%w: %w", errSnapshot, errPlain)
	case magic != snapMagic && magic != sealedMagic:
		return nil, fmt.Errorf("%w: no trailer (torn write?)", errSnapshot)
	}
	applied := binary.LittleEndian.Uint64(tr[0:])
	idxOff := int64(binary.LittleEndian.Uint64(tr[8:]))
	sum := binary.LittleEndian.Uint32(tr[16:])
	if idxOff < int64(len(snapMagic)) || idxOff > size-int64(trailerLen) {
		return nil, fmt.Errorf("%w: index offset %d", errSnapshot, idxOff)
	}
	idx := make([]byte, size-int64(trailerLen)-idxOff)
	if _, err := f.ReadAt(idx, idxOff); err != nil {
		return nil, err
	}
	if crc32.Checksum(idx, crcTable) != sum {
		return nil, fmt.Errorf("%w: index checksum", errSnapshot)
	}
	if ring != nil {
		if idx, err = ring.Open(nil, idx, []byte(indexName)); err != nil {
			return nil, fmt.Errorf("%w: index: %w", errSnapshot, err)
		}
	}
	identity, index, err := decodeIndex(idx)
	if err != nil {
		return nil, err
	}
	return &snapFile{f: f, applied: applied, identity: identity, index: index, ring: ring}, nil
}

func decodeIndex(idx []byte) (string, []snapEntry, error) {
	r := &reader{b: idx}
	identity := r.str()
	n := r.u32()
	index := make([]snapEntry, 0, min(n, 1<<20))
	for range n {
		e := snapEntry{id: r.str(), off: int64(r.u64()), size: r.u32(), headerSeq: r.u64(), lastSeq: r.u64()}
		e.created = time.Unix(0, int64(r.u64()))
		e.modified = time.Unix(0, int64(r.u64()))
		e.entries = r.u32()
		e.cwd, e.parentSession = r.str(), r.str()
		flag := r.take(1)
		e.hasName = len(flag) == 1 && flag[0] == 1
		e.name = r.str()
		if nl := r.u32(); nl > 0 && r.err == nil {
			e.labels = make(map[string]string, min(nl, 1<<16))
			for range nl {
				k := r.str()
				e.labels[k] = r.str()
			}
		}
		index = append(index, e)
	}
	if r.err != nil {
		return "", nil, r.err
	}
	if len(r.b) == 0 {
		return identity, index, nil // a file without the second part
	}
	for i := range index {
		e := &index[i]
		switch flag := r.take(1); {
		case len(flag) == 1 && flag[0] == previewNone:
			e.firstKnown = true
		case len(flag) == 1 && flag[0] == previewText:
			first := r.str()
			e.first, e.firstKnown = &first, true
		}
		if last := int64(r.u64()); last != 0 {
			e.lastEntry = time.Unix(0, last)
		}
	}
	if r.err != nil {
		return "", nil, r.err
	}
	return identity, index, nil
}

// readBlock reads and checks one session's block.
func (sf *snapFile) readBlock(e *snapEntry) (header []byte, seqs []uint64, lines [][]byte, err error) {
	buf := make([]byte, 8+int(e.size))
	if _, err := sf.f.ReadAt(buf, e.off); err != nil {
		return nil, nil, nil, err
	}
	if binary.LittleEndian.Uint32(buf) != e.size || binary.LittleEndian.Uint32(buf[4:]) != crc32.Checksum(buf[8:], crcTable) {
		return nil, nil, nil, fmt.Errorf("%w: block of %s: checksum", errSnapshot, e.id)
	}
	payload := buf[8:]
	if sf.ring != nil {
		if payload, err = sf.ring.Open(nil, payload, []byte(e.id)); err != nil {
			return nil, nil, nil, fmt.Errorf("%w: block of %s: %w", errSnapshot, e.id, err)
		}
	}
	r := &reader{b: payload}
	r.u64() // header seq, also in the index
	header = r.bytes()
	n := r.u32()
	seqs, lines = make([]uint64, 0, n), make([][]byte, 0, n)
	for range n {
		seqs = append(seqs, r.u64())
		lines = append(lines, r.bytes())
	}
	if r.err != nil {
		return nil, nil, nil, fmt.Errorf("block of %s: %w", e.id, r.err)
	}
	return header, seqs, lines, nil
}
