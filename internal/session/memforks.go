package session

import (
	"context"
	"sort"
	"sync"
)

// MemForks is a ForkRegistry in memory, for tests.
type MemForks struct {
	mu    sync.Mutex
	forks map[string]map[string]bool
}

var _ ForkRegistry = (*MemForks)(nil)

// NewMemForks returns an empty registry.
func NewMemForks() *MemForks { return &MemForks{forks: map[string]map[string]bool{}} }

// RecordFork notes fork under parent.
func (m *MemForks) RecordFork(_ context.Context, parent, fork string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.forks[parent] == nil {
		m.forks[parent] = map[string]bool{}
	}
	m.forks[parent][fork] = true
	return nil
}

// Forks lists parent's forks, sorted.
func (m *MemForks) Forks(_ context.Context, parent string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for f := range m.forks[parent] {
		out = append(out, f)
	}
	sort.Strings(out)
	return out, nil
}

// ForgetForks drops parent's forks.
func (m *MemForks) ForgetForks(_ context.Context, parent string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.forks, parent)
	return nil
}
