package region

import (
	"context"
	"testing"
)

// TestEraseQueue: jobs come out in order; a reconcile waiting behind
// others absorbs a second one, but one that may be running (the first)
// never does.
func TestEraseQueue(t *testing.T) {
	q := eraseQueue{wake: make(chan struct{}, 1)}
	ctx := context.Background()
	q.push(eraseJob{}) // a reconcile, then taken by the worker
	if j, ok := q.next(ctx); !ok || j.src != nil {
		t.Fatalf("first job %+v %v, want the reconcile", j, ok)
	}
	q.push(eraseJob{}) // the record changed while it ran: a second one
	if len(q.jobs) != 2 {
		t.Fatalf("a reconcile pushed while the first may run: %d jobs, want 2", len(q.jobs))
	}
	q.push(eraseJob{}) // a third waits behind the second: absorbed
	if len(q.jobs) != 2 {
		t.Fatalf("a reconcile pushed behind a waiting one: %d jobs, want 2", len(q.jobs))
	}
	q.push(eraseJob{src: newFeed(), sid: "s1", upTo: 3}) // a notice's job
	if len(q.jobs) != 3 {
		t.Fatalf("a notice's job behind a waiting reconcile: %d jobs, want 3", len(q.jobs))
	}
	q.done()
	if j, ok := q.next(ctx); !ok || j.src != nil {
		t.Fatalf("second job %+v %v, want the reconcile", j, ok)
	}
	q.done()
	if j, ok := q.next(ctx); !ok || j.sid != "s1" {
		t.Fatalf("then %+v %v, want s1's job", j, ok)
	}
	q.done()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, ok := q.next(cctx); ok {
		t.Fatal("next on an empty queue with ctx done: ok")
	}
}
