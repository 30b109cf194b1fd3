package writer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// TestWritesCheckShapes: the Writer refuses a message not of pi's shape,
// naming the member, before anything is published; a fork refuses a path
// holding such an entry (stored before the checks, or by another writer).
func TestWritesCheckShapes(t *testing.T) {
	ctx := context.Background()
	l := session.NewMemLog(1000, 8<<20)
	w, err := writer.Create(l, writer.CreateOptions{}, writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendMessage(ctx, []byte(`{"role":"user","content":"q"}`)); err != nil {
		t.Fatal(err)
	}
	for msg, field := range map[string]string{
		`{"role":42}`: "entries[0].message.role",
		`{"role":"assistant","content":"a","provider":"p","model":"m"}`:                                                  "entries[0].message.content",
		`{"role":"assistant","content":[{"type":"image","data":"A","mimeType":"image/png"}],"provider":"p","model":"m"}`: "entries[0].message.content[0].type",
	} {
		_, err := w.AppendMessage(ctx, []byte(msg))
		var fe *wire.FieldError
		if !errors.As(err, &fe) || fe.Field != field || !errors.Is(err, wire.ErrInvalid) {
			t.Errorf("%s: %v, want a field error at %s", msg, err, field)
		}
	}
	if _, err := w.AppendCompaction(ctx, "s", "x", 0/zero(), nil, nil); !errors.Is(err, wire.ErrInvalid) {
		t.Errorf("a compaction with tokensBefore NaN: %v", err)
	}
	if w.Flushed() || len(w.Context().Path) != 1 {
		t.Fatalf("a refused append changed the writer: flushed %v, a path of %d", w.Flushed(), len(w.Context().Path))
	}

	// A source read without checks, as legacy data would be.
	file := []byte(`{"type":"session","version":3,"id":"01a22bdc-6ce8-7741-8406-3ad384bc1b94","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}
{"type":"model_change","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:01.000Z","provider":"p"}
`)
	f, err := tree.Read(file, tree.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = writer.Fork(ctx, l, f.Session, "b", time.Now(), nil, writer.RetryPolicy{}, false)
	var fe *wire.FieldError
	if !errors.As(err, &fe) || fe.Field != "entryId" {
		t.Errorf("fork of a bad path: %v", err)
	}
	if _, _, err := writer.Fork(ctx, l, f.Session, "a", time.Now(), nil, writer.RetryPolicy{}, false); err != nil {
		t.Errorf("fork of the good part: %v", err)
	}
	if n, _ := l.LastSeq(ctx); n != 2 {
		t.Errorf("the log holds %d records, want the good fork's 2", n)
	}
}

func zero() float64 { return 0 }
