package session

import (
	"context"
	"math/rand/v2"
	"time"
)

// Sleep waits for backoff (with jitter, so writers that failed together do
// not retry together) and doubles it; false if ctx ended first.
func Sleep(ctx context.Context, backoff *time.Duration, limit time.Duration) bool {
	d := *backoff/2 + rand.N(*backoff)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	}
	if *backoff *= 2; *backoff > limit {
		*backoff = limit
	}
	return true
}
