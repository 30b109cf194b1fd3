package seal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A sealed stream (a backup file) is streamMagic, then chunks: each a u32
// length and a sealed message of up to ChunkSize bytes. A chunk is bound to
// the stream's name, its index and whether it is the last, so that chunks
// cannot be reordered, dropped, moved between files or cut off at a chunk
// boundary without Open failing; the last one may be empty.
const (
	streamMagic = "PISEALS1"
	// ChunkSize is the most plain bytes a chunk holds.
	ChunkSize = 64 << 10
)

// ErrTruncated means a sealed stream ends before its last chunk.
var ErrTruncated = errors.New("seal: the sealed stream is cut short (no last chunk)")

func chunkName(name string, index uint64, last bool) []byte {
	b := append([]byte(name), 0)
	b = binary.LittleEndian.AppendUint64(b, index)
	if last {
		return append(b, 1)
	}
	return append(b, 0)
}

// Writer seals what is written to it into w, chunk by chunk; Close writes
// the last chunk (and does not close w).
type Writer struct {
	w      io.Writer
	r      *Ring
	name   string
	buf    []byte
	out    []byte
	index  uint64
	err    error
	closed bool
}

// NewWriter returns a Writer of a stream named name (the restore must
// give the same name) into w, sealed with r's current key.
func NewWriter(w io.Writer, r *Ring, name string) *Writer {
	return &Writer{w: w, r: r, name: name, buf: make([]byte, 0, ChunkSize)}
}

func (sw *Writer) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 && sw.err == nil {
		if len(sw.buf) == ChunkSize {
			// Full, and more is coming: not the last chunk.
			sw.flush(false)
			continue
		}
		k := copy(sw.buf[len(sw.buf):ChunkSize], p)
		sw.buf = sw.buf[:len(sw.buf)+k]
		p, n = p[k:], n+k
	}
	return n, sw.err
}

func (sw *Writer) flush(last bool) {
	if sw.index == 0 {
		if _, sw.err = io.WriteString(sw.w, streamMagic); sw.err != nil {
			return
		}
	}
	sw.out = binary.LittleEndian.AppendUint32(sw.out[:0], 0)
	sw.out = sw.r.Seal(sw.out, sw.buf, chunkName(sw.name, sw.index, last))
	binary.LittleEndian.PutUint32(sw.out, uint32(len(sw.out)-4))
	_, sw.err = sw.w.Write(sw.out)
	sw.buf = sw.buf[:0]
	sw.index++
}

// Close seals the last chunk.
func (sw *Writer) Close() error {
	if sw.closed || sw.err != nil {
		return sw.err
	}
	sw.closed = true
	sw.flush(true)
	return sw.err
}

// Reader opens a sealed stream.
type Reader struct {
	r     *bufio.Reader
	ring  *Ring
	name  string
	index uint64
	plain []byte
	last  bool
	err   error
}

// NewReader returns the plain stream of the sealed stream named name in r.
// Its Read fails (ErrOpen, ErrTruncated or a format error) as soon as what
// it read does not open; a caller that must not act on part of a damaged
// stream reads it whole first.
func NewReader(r io.Reader, ring *Ring, name string) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, ChunkSize+1024), ring: ring, name: name}
}

func (sr *Reader) Read(p []byte) (int, error) {
	for len(sr.plain) == 0 && sr.err == nil {
		if sr.last {
			if _, err := sr.r.ReadByte(); err == nil {
				sr.err = fmt.Errorf("seal: data after the last chunk of %s", sr.name)
			} else {
				sr.err = io.EOF
			}
			break
		}
		sr.next()
	}
	if len(sr.plain) > 0 {
		n := copy(p, sr.plain)
		sr.plain = sr.plain[n:]
		return n, nil
	}
	return 0, sr.err
}

func (sr *Reader) next() {
	if sr.index == 0 {
		magic := make([]byte, len(streamMagic))
		if _, err := io.ReadFull(sr.r, magic); err != nil || string(magic) != streamMagic {
			sr.err = fmt.Errorf("seal: %s is not a sealed stream (no %s at its start)", sr.name, streamMagic)
			return
		}
	}
	var hdr [4]byte
	if _, err := io.ReadFull(sr.r, hdr[:]); err != nil {
		sr.err = ErrTruncated
		return
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > ChunkSize+uint32(sr.ring.Overhead()) {
		sr.err = fmt.Errorf("seal: chunk %d of %s: %d bytes, more than a chunk holds", sr.index, sr.name, n)
		return
	}
	sealed := make([]byte, n)
	if _, err := io.ReadFull(sr.r, sealed); err != nil {
		sr.err = ErrTruncated
		return
	}
	// The last chunk is the one that opens as the last.
	for _, last := range []bool{false, true} {
		if plain, err := sr.ring.Open(sr.plain[:0], sealed, chunkName(sr.name, sr.index, last)); err == nil {
			sr.plain, sr.last = plain, last
			sr.index++
			return
		}
	}
	sr.err = fmt.Errorf("chunk %d of %s: %w", sr.index, sr.name, ErrOpen)
}
