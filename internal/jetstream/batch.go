package jetstream

import (
	"github.com/nats-io/nats.go"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/pifleet/sessionlog/internal/session"
)

// batchHeaders is what batch assembly needs of a message's headers.
type batchHeaders struct {
	id     string // Nats-Batch-Id; "" for a message outside any batch
	commit bool   // Nats-Batch-Commit is set: the batch's last message
}

// batchOf reads the batch headers of a stream message. Nats-Batch-Sequence
// is not needed: messages are taken in stream order, and a committed batch
// is stored contiguously.
func batchOf(h nats.Header) batchHeaders {
	return batchHeaders{
		id:     h.Get(jetstreamext.BatchIDHeader),
		commit: h.Get(jetstreamext.BatchCommitHeader) != "",
	}
}

// batchAssembler turns records read in stream order into records ready to
// apply, holding those of an atomic batch until its commit: a reader may see
// a prefix of a batch the server is still storing, and must never apply one.
// A record outside any batch passes through. The zero value is ready; it
// does no I/O.
//
// Records come out in the order they went in, so whatever is still held
// when reading stops lies after everything emitted: dropping it and reading
// again from after the last record applied skips nothing.
type batchAssembler struct {
	held []session.Stored
	id   string // the batch held, when len(held) > 0
}

// add takes the next record and its batch headers and appends to ready the
// records it completes, returning the extended slice. A record that is not
// of the batch held (another batch id, or none) first releases the held
// records as they are: committed batches are stored contiguously, so that
// does not happen, but if it did, skipping records would be worse than
// applying an incomplete group. A commit releases what is held of its
// batch: all of it, unless reading began inside the batch.
func (a *batchAssembler) add(ready []session.Stored, s session.Stored, b batchHeaders) []session.Stored {
	if len(a.held) > 0 && b.id != a.id {
		ready = a.release(ready)
	}
	if b.id == "" {
		return append(ready, s)
	}
	a.held, a.id = append(a.held, s), b.id
	if b.commit {
		ready = a.release(ready)
	}
	return ready
}

// release appends the held records to ready and holds nothing. The held
// array is reused (append copied its records), cleared so that it keeps no
// record's data alive.
func (a *batchAssembler) release(ready []session.Stored) []session.Stored {
	ready = append(ready, a.held...)
	clear(a.held)
	a.held, a.id = a.held[:0], ""
	return ready
}

// heldThrough returns the sequence of the last record held, and whether a
// batch is held at all: its commit is still to come.
func (a *batchAssembler) heldThrough() (uint64, bool) {
	if len(a.held) == 0 {
		return 0, false
	}
	return a.held[len(a.held)-1].Seq, true
}
