package archive

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/pifleet/sessionlog/internal/wire"
)

// stats are the Archiver's counters since the process started.
type stats struct {
	archivedN atomic.Uint64 // sessions archived (Repaired included)
	repairedN atomic.Uint64
	restores  atomic.Uint64
	erased    atomic.Uint64
	passes    atomic.Uint64

	mu       sync.Mutex
	last     wire.ArchivePass  // the last pass this node ran
	byPolicy map[[2]string]int // sessions archived or erased by policy, by tenant and action
}

// retained counts a session a policy pass archived or erased.
func (s *stats) retained(tenant, action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byPolicy == nil {
		s.byPolicy = map[[2]string]int{}
	}
	s.byPolicy[[2]string{tenant, action}]++
}

func (s *stats) archived(out Outcome) {
	s.archivedN.Add(1)
	if out == Repaired {
		s.repairedN.Add(1)
	}
}

func (s *stats) pass(r wire.ArchivePass) {
	s.passes.Add(1)
	s.mu.Lock()
	s.last = r
	s.mu.Unlock()
}

// Stats are the Archiver's counters, for metrics (pi-node exports them to
// Prometheus; the collector lives there so that this package, which the
// client links through the JetStream adapter, needs no Prometheus).
type Stats struct {
	Archived, Repaired, Restored, Passes uint64
	// Erased counts the sessions this node erased (Erase).
	Erased   uint64
	LastPass wire.ArchivePass
	// Retained counts the sessions retention passes on this node archived
	// or erased, by tenant and action ("archive", "erase").
	Retained map[[2]string]int
}

// Stats returns the counters.
func (a *Archiver) Stats() Stats {
	a.stats.mu.Lock()
	last := a.stats.last
	retained := maps.Clone(a.stats.byPolicy)
	a.stats.mu.Unlock()
	return Stats{
		Archived: a.stats.archivedN.Load(), Repaired: a.stats.repairedN.Load(),
		Restored: a.stats.restores.Load(), Passes: a.stats.passes.Load(), Erased: a.stats.erased.Load(), LastPass: last, Retained: retained,
	}
}
