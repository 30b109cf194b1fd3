package testutil

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	n := 0
	d, err := Poll(10*time.Second, func() error {
		if n++; n < 3 {
			return fmt.Errorf("call %d", n)
		}
		return nil
	})
	if err != nil || n != 3 || d <= 0 {
		t.Fatalf("Poll: %v after %d calls, %v", err, n, d)
	}
	last := errors.New("still not")
	if _, err := Poll(30*time.Millisecond, func() error { return last }); !errors.Is(err, last) || !strings.Contains(err.Error(), "the same in all") {
		t.Fatalf("Poll after its timeout: %v, want the last error, the same in every poll", err)
	}
	// A wait whose view changed names its first view too.
	calls := 0
	_, err = Poll(30*time.Millisecond, func() error {
		calls++
		return fmt.Errorf("call %d", calls)
	})
	if want := fmt.Sprintf("call %d (the last of %d polls; the first said: call 1)", calls, calls); calls < 2 || err == nil || err.Error() != want {
		t.Fatalf("Poll after its timeout: %v, want %q", err, want)
	}
}

func TestWaitFor(t *testing.T) {
	calls := 0
	WaitFor(t, 10*time.Second, func() error {
		if calls++; calls < 2 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 2 {
		t.Fatalf("%d calls, want 2", calls)
	}
}

func TestFreePorts(t *testing.T) {
	ports := FreePorts(t, 5)
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v: not distinct and positive", ports)
		}
		seen[p] = true
	}
	if p := FreePort(t); p <= 0 {
		t.Fatalf("FreePort: %d", p)
	}
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprint(&b, "x")
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := len(b.String()); n != 400 {
		t.Fatalf("%d bytes, want 400", n)
	}
}

// TestAwaiting: a labelled condition's error names the wait; success stays nil.
func TestAwaiting(t *testing.T) {
	cond := Awaiting("the leader", func() error { return errors.New("none yet") })
	if err := cond(); err == nil || err.Error() != "the leader: none yet" {
		t.Fatalf("got %v", err)
	}
	if err := Awaiting("x", func() error { return nil })(); err != nil {
		t.Fatal(err)
	}
}
