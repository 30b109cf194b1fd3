package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Progress is told how far the current phase of a scenario is: done of
// total operations. pi-bench draws it on a terminal; nil draws nothing.
type Progress func(phase string, done, total int)

func (p Progress) report(phase string, done, total int) {
	if p != nil {
		p(phase, done, total)
	}
}

// meter times one worker's operations. The latencies are the worker's own
// (merged after the run, so recording takes no lock); the shared counter
// only feeds the progress line.
type meter struct {
	w    int // the worker's index, for per-worker clients
	lat  latencies
	done *atomic.Int64
}

// time runs op and records how long it took, if it succeeded.
func (m *meter) time(op func() error) error {
	start := time.Now()
	if err := op(); err != nil {
		return err
	}
	m.lat = append(m.lat, time.Since(start))
	m.done.Add(1)
	return nil
}

// tally is what one way measured over the rounds of a scenario.
type tally struct {
	lat  latencies
	wall time.Duration
	api  int64           // JetStream API requests made meanwhile
	cpu  []time.Duration // CPU time of each process meanwhile (Env.cpuNames)
}

func (t *tally) addCPU(before, after []time.Duration) {
	if t.cpu == nil && len(after) > 0 {
		t.cpu = make([]time.Duration, len(after))
	}
	for i := range after {
		t.cpu[i] += after[i] - before[i]
	}
}

func (t *tally) add(lat latencies, wall time.Duration, api int64) {
	t.lat, t.wall, t.api = append(t.lat, lat...), t.wall+wall, t.api+max(0, api)
}

// share is round r's part of n things split over rounds.
func share(n, rounds, r int) int {
	if r < n%rounds {
		return n/rounds + 1
	}
	return n / rounds
}

// runJobs runs jobs 0..jobs-1 on `workers` goroutines (each takes the next
// job when it finishes one) and returns the merged latencies of every timed
// operation with the wall time of the whole run. A job is one unit of the
// scenario — one session's appends, one creation — and times each of its
// operations with its meter. The first error cancels the other jobs and is
// returned. total (operations expected) is only for the progress line.
func runJobs(parent context.Context, prog Progress, phase string, workers, jobs, total int,
	job func(ctx context.Context, j int, m *meter) error) (latencies, time.Duration, error) {
	workers = max(1, min(workers, jobs))
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var next, done atomic.Int64
	meters := make([]meter, workers)
	var firstErr error
	var errOnce sync.Once
	stopProgress := watchProgress(prog, phase, &done, total)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		meters[w].w, meters[w].done = w, &done
		wg.Go(func() {
			for ctx.Err() == nil {
				j := int(next.Add(1)) - 1
				if j >= jobs {
					return
				}
				if err := job(ctx, j, &meters[w]); err != nil {
					errOnce.Do(func() { firstErr = err })
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	stopProgress()
	if firstErr != nil {
		return nil, wall, firstErr
	}
	if err := parent.Err(); err != nil {
		return nil, wall, err // interrupted: not a result
	}
	var all latencies
	for _, m := range meters {
		all = append(all, m.lat...)
	}
	return all, wall, nil
}

// watchProgress reports done/total every 200 ms until the returned stop is
// called, which reports the phase complete.
func watchProgress(prog Progress, phase string, done *atomic.Int64, total int) (stop func()) {
	if prog == nil {
		return func() {}
	}
	prog(phase, 0, total)
	stopTicks := every(200*time.Millisecond, func() { prog(phase, int(done.Load()), total) })
	return func() {
		stopTicks()
		prog(phase, int(done.Load()), total)
	}
}

// every calls f every d on a goroutine of its own until stop, which
// returns once f is no longer running.
func every(d time.Duration, f func()) (stop func()) {
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				f()
			}
		}
	}()
	return func() { close(quit); <-finished }
}
