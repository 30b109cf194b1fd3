package service_test

import (
	"math/rand/v2"
	"testing"
)

// testTailPurged: a Store started after the log's last session was purged
// catches up (the purge leaves its notice after the deleted records, so
// the stream's end is a record the Store can reach) and holds the others.
func testTailPurged(t *testing.T, b backend) {
	ctx := ctxT(t)
	r := rand.New(rand.NewPCG(21, 22))
	files := [][]byte{genSession(t, r, 5), genSession(t, r, 5)}
	importAll(t, b.log, files)
	if err := b.log.Purge(ctx, sessionIDOf(files[1])); err != nil {
		t.Fatal(err)
	}
	end, err := b.feed.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t, b)
	if err := st.CatchUp(ctx); err != nil {
		t.Fatalf("catch up after a purge at the log's end (%d): %v; %+v", end, err, st.Stats())
	}
	if s := st.Stats(); s.Applied < end || s.Sessions != 1 {
		t.Fatalf("after a purge at the log's end (%d): applied %d, %d sessions (want 1)", end, s.Applied, s.Sessions)
	}
}
