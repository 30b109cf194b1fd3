package client

import (
	"errors"
	"testing"

	"github.com/pifleet/sessionlog/internal/nodetest"
)

// TestDelete: over each API transport, a delete with a stale
// DeleteIfLastSeq is a *ConflictError naming the session's last sequence
// and erases nothing; with the right one it erases the header and both
// entries; the session is then ErrNotFound to Open, to the worker that
// still holds it, and to a second Delete; a session beside it stays. The
// JetStream transport cannot erase.
func TestDelete(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	for _, kind := range []string{"HTTP", "NodeNATS"} {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			c := dial(t, n, kind)
			s, err := c.Create(WithCwd("/delete/" + kind))
			if err != nil {
				t.Fatal(err)
			}
			must(t)(s.AppendMessage(ctx, user("a secret to forget")))
			last := must(t)(s.AppendMessage(ctx, assistant("forgotten")))
			other, err := c.Create(WithCwd("/delete/" + kind))
			if err != nil {
				t.Fatal(err)
			}
			must(t)(other.AppendMessage(ctx, user("keep me")))
			must(t)(other.AppendMessage(ctx, assistant("kept")))

			_, err = c.Delete(ctx, s.ID(), DeleteIfLastSeq(last.Seq-1))
			var ce *ConflictError
			if !errors.As(err, &ce) || ce.LastSeq != last.Seq {
				t.Fatalf("delete with a stale sequence: %v, want a conflict at %d", err, last.Seq)
			}
			if _, err := c.Open(ctx, s.ID()); err != nil {
				t.Fatalf("open after a refused delete: %v", err)
			}
			r, err := c.Delete(ctx, s.ID(), DeleteIfLastSeq(last.Seq))
			if err != nil || r.SessionID != s.ID() || r.Records != 3 || r.LastSeq != last.Seq || r.ArchivedCopies != 0 {
				t.Fatalf("delete: %+v, %v; want 3 records up to %d", r, err, last.Seq)
			}
			if _, err := c.Open(ctx, s.ID()); !errors.Is(err, ErrNotFound) {
				t.Errorf("open after the delete: %v, want ErrNotFound", err)
			}
			if _, err := s.AppendMessage(ctx, user("still there?")); err == nil {
				t.Error("the worker that held the session appended to it after its erasure")
			}
			if _, err := c.Delete(ctx, s.ID()); !errors.Is(err, ErrNotFound) {
				t.Errorf("second delete: %v, want ErrNotFound", err)
			}
			o, err := c.Open(ctx, other.ID())
			if err != nil || o.LastSeq() != other.LastSeq() {
				t.Errorf("the session beside it: %v, at %d, want %d", err, o.LastSeq(), other.LastSeq())
			}
		})
	}
	c := dial(t, n, "JetStream")
	if _, err := c.Delete(ctxT(t), "019ae000-0000-7000-8000-000000000000"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("delete over JetStream: %v, want errors.ErrUnsupported", err)
	}
}
