package store

import (
	"errors"

	"github.com/pifleet/sessionlog/internal/session"
)

// applyPurge drops a purged session (a notice of Log.Purge).
func (st *Store) applyPurge(r *session.Stored) {
	n, ok := session.ParseNotice(r.Data)
	if !ok {
		st.skip(r, errors.New("malformed purge notice"))
		return
	}
	st.dropPending(n.Session, n.UpTo)
	if n.Erase {
		defer st.snapshotSoon()
	}
	d := st.docs[n.Session]
	if d == nil || d.HeaderSeq > n.UpTo {
		return
	}
	if d.Tree != nil {
		st.held -= int64(d.Tree.Bytes())
	}
	delete(st.docs, n.Session)
	st.leaveSlabLocked(d)
}

// snapshotSoon asks snapshotLoop for a snapshot (one pending request is
// enough: the snapshot it writes covers every erasure applied before it).
func (st *Store) snapshotSoon() {
	select {
	case st.erased <- struct{}{}:
	default:
	}
}
