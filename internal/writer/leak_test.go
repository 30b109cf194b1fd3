package writer_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/writer"
)

// TestWriterStartsNoGoroutines: a Writer (created, published, reopened,
// forked) owns no goroutine, so it needs no Close.
func TestWriterStartsNoGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ctx := context.Background()
	l := session.NewMemLog(1000, 1<<20)
	w, err := writer.Create(l, writer.CreateOptions{Cwd: "/leak"}, writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := w.AppendMessage(ctx, enginetest.UserMessage("q"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendMessage(ctx, enginetest.AssistantMessage("a")); err != nil {
		t.Fatal(err)
	}
	w2, err := writer.Open(ctx, l, w.ID(), writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w2.AppendMessage(ctx, enginetest.UserMessage("more")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Fork(ctx, q, writer.CreateOptions{Cwd: "/leak"}); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
}
