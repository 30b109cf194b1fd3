package writer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/writer"
)

// slowLog stores a batch only when the attempt's deadline leaves it perMiB
// for each MiB of the batch (a leader replicating and syncing it on a
// loaded machine); a sooner deadline times out, as the publish would.
type slowLog struct {
	session.Log
	perMiB time.Duration
}

func (l slowLog) Append(ctx context.Context, sid string, expect uint64, recs []session.Record) ([]uint64, error) {
	bytes := 0
	for _, r := range recs {
		bytes += len(r.Data)
	}
	need := time.Duration(bytes) * l.perMiB / (1 << 20)
	if d, ok := ctx.Deadline(); ok && time.Until(d) < need {
		<-ctx.Done() // the answer would come after it
		return nil, ctx.Err()
	}
	return l.Log.Append(ctx, sid, expect, recs)
}

// TestLargeAppendAttempt: the default attempt timeout grows with the
// batch's bytes, so an append of two 4.4 MiB entries to a log that takes
// 150 ms per MiB is stored at the first attempt. With a timeout of 500 ms
// and 1 ms per record every attempt timed out until the append gave up
// with ErrUnavailable (pi-node's 503 for a valid 8.8 MiB append).
func TestLargeAppendAttempt(t *testing.T) {
	l := slowLog{Log: session.NewMemLog(1000, 16<<20), perMiB: 150 * time.Millisecond}
	w, err := writer.Create(l, writer.CreateOptions{Cwd: "/large"}, writer.Options{Retry: writer.RetryPolicy{UnavailableFor: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Scale(time.Minute))
	defer cancel()
	big := strings.Repeat("x", 44<<20/10)
	if _, err := w.AppendMessage(ctx, enginetest.UserMessage(big)); err != nil {
		t.Fatal(err)
	}
	// The flush: the header and both entries, 8.8 MiB, in one batch.
	if _, err := w.AppendMessage(ctx, enginetest.AssistantMessage(big)); err != nil {
		t.Fatalf("append of 8.8 MiB: %v", err)
	}
}

// lateLog stores every batch at once, as a leader does, but its answer
// comes only after ack: an attempt whose deadline is sooner times out
// though its records landed (a loaded server, or one whose read loop waits
// on a disk, as a compose region's node did in CI).
type lateLog struct {
	session.Log
	ack time.Duration
}

func (l lateLog) Append(ctx context.Context, sid string, expect uint64, recs []session.Record) ([]uint64, error) {
	seqs, err := l.Log.Append(context.Background(), sid, expect, recs)
	if d, ok := ctx.Deadline(); ok && time.Until(d) < l.ack {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return seqs, err
}

// TestLateAcks: when every answer comes later than the attempt timeout, the
// timeout grows after each attempt that timed out, so an append is
// acknowledged (its first attempt's records recognised, not stored twice)
// instead of timing out every attempt until it gives up with ErrUnavailable,
// which a fixed timeout did.
func TestLateAcks(t *testing.T) {
	mem := session.NewMemLog(1000, 1<<20)
	base := 50 * time.Millisecond
	l := lateLog{Log: mem, ack: 3 * base} // answered at the third attempt (4× base)
	pol := writer.RetryPolicy{AttemptTimeout: base, UnavailableFor: time.Minute}
	w, err := writer.Create(l, writer.CreateOptions{Cwd: "/late"}, writer.Options{Retry: pol})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Scale(time.Minute))
	defer cancel()
	for i := range 3 {
		if _, err := w.AppendMessage(ctx, enginetest.UserMessage("question")); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if _, err := w.AppendMessage(ctx, enginetest.AssistantMessage("answer")); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	got, err := mem.Read(ctx, w.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 { // the header and six entries, each once
		t.Fatalf("the log holds %d records, want 7 (the header and 6 entries, each once)", len(got))
	}
}
