package store

// Reset forgets every session and the applied sequence, so that the Store
// rebuilds itself from the first record its Feed delivers next.
//
// It exists for Feeds whose stream can be replaced by another one with a
// different history under a running Store — a region failover makes a
// mirror the new home, and a node that had applied records of the old home
// which never reached the mirror would otherwise keep them, at sequences
// the new home uses for other records. Such a Feed calls Reset from within
// Follow, between two calls of apply, and then delivers the new stream from
// its start.
//
// Until it has caught up again the Store reports itself behind the log
// (readiness fails, reads are flagged stale) and answers ErrNotFound for
// sessions it has not re-applied yet; read-your-writes (WaitFor) keeps
// working, since it waits for sequences of the new stream.
func (st *Store) Reset() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.docs = make(map[string]*Doc)
	st.pending = make(map[string]*pendingDoc)
	st.applied = 0
	st.held = 0
	st.stats.caughtUpAt.Store(0)
	st.stats.logLastSeq.Store(0)
	st.stats.polledAt.Store(0)
	st.stats.noted.Store(0)    // sequences of the old stream
	st.stats.firstEnd.Store(0) // re-learned from the new stream
	close(st.progress)
	st.progress = make(chan struct{})
}
