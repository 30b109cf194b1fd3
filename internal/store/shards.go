package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Shards is the read model of a log in shards: one Store per shard, each
// following its shard's stream with qualified sequences
// (shard.Log). A *Store is the Shards of a log of one shard, so
// what reads through Shards works unchanged without them. The functions
// below answer for all shards at once (stats, the catalog, waits by
// sequence).
type Shards interface {
	// All returns the Stores, by shard.
	All() []*Store
	// For returns the Store of session sid's shard.
	For(sid string) *Store
}

// All is the Store alone; see Shards.
func (st *Store) All() []*Store { return []*Store{st} }

// For is the Store itself; see Shards.
func (st *Store) For(string) *Store { return st }

// Set is the Shards of a sharded log: a Store per shard stream, sessions
// placed by the store's shard map. It grows when the map does (Grow).
type Set struct {
	tab *shard.Table[*Store]
}

// NewSet places sessions by m over stores, one per shard stream.
func NewSet(m shard.Map, stores []*Store) (*Set, error) {
	tab, err := shard.NewTable(m, stores)
	if err != nil {
		return nil, err
	}
	return &Set{tab: tab}, nil
}

// Grow changes the map to m, which must extend the current one
// (shard.Extends), with the Stores of the streams it adds (opened by the
// caller: their reads answer as soon as they are in the Set).
func (s *Set) Grow(m shard.Map, more []*Store) error { return s.tab.Grow(m, more) }

// Replace puts st in shard k's place and returns the Store it replaces:
// a node that takes a shard over puts a Store that follows it there, one
// that hands it back an Unheld one. The caller opens and closes them.
func (s *Set) Replace(k int, st *Store) (*Store, error) { return s.tab.Replace(k, st) }

// Map is the shard map the Set places sessions by.
func (s *Set) Map() shard.Map { return s.tab.Map() }

// All returns the Stores, by shard (none for a nil Set); see Shards.
func (s *Set) All() []*Store {
	if s == nil {
		return nil
	}
	return s.tab.All()
}

// For returns sid's shard's Store; see Shards.
func (s *Set) For(sid string) *Store {
	st, _ := s.tab.Route(sid)
	return st
}

// Shard is session sid's shard.
func (s *Set) Shard(sid string) int {
	_, k := s.tab.Route(sid)
	return k
}

// At returns the Store of the shard seq belongs to, or an error naming
// the shard when the log has no such shard.
func At(sh Shards, seq uint64) (*Store, error) {
	if st, ok := sh.(*Store); ok && shard.OfSeq(seq) == 0 {
		return st, nil // unsharded: no slice per call on the append path
	}
	all := sh.All()
	k := shard.OfSeq(seq)
	if k >= len(all) {
		return nil, fmt.Errorf("%w: sequence %d is of shard %d; this store has %d shard(s)", wire.ErrInvalid, seq, k, len(all))
	}
	return all[k], nil
}

// AppliedAt reports whether the Store of seq's shard has applied it.
func AppliedAt(sh Shards, seq uint64) bool {
	st, err := At(sh, seq)
	return err == nil && st.Applied() >= seq
}

// WaitAt waits until seq's shard has applied seq; see Store.WaitFor.
func WaitAt(ctx context.Context, sh Shards, seq uint64) error {
	st, err := At(sh, seq)
	if err != nil {
		return err
	}
	return st.WaitFor(ctx, seq)
}

// NoteLogSeq tells seq's shard that its log holds seq; see Store.NoteLogSeq.
func NoteLogSeq(sh Shards, seq uint64) {
	if st, err := At(sh, seq); err == nil {
		st.NoteLogSeq(seq)
	}
}

// StatsOf adds the shards' Stats up. Applied, LogLastSeq and Lag are then
// sums of the shards' positions in their own streams: a count of records,
// not a sequence to wait for (with one shard, they are its own). The Store
// is caught up since the latest of the shards' CaughtUpAt, and not at all
// while one of them never was.
func StatsOf(sh Shards) Stats {
	all := sh.All()
	if len(all) == 1 {
		return all[0].Stats()
	}
	var out Stats
	var ups []time.Time
	for i, st := range all {
		if !st.Held() {
			continue // a shard held elsewhere: nothing here to count or wait for
		}
		s := st.Stats()
		out.Applied += shard.Raw(s.Applied)
		out.LogLastSeq += shard.Raw(s.LogLastSeq)
		out.Lag += s.Lag
		ups = append(ups, s.CaughtUpAt)
		out.Sessions += s.Sessions
		out.Loaded += s.Loaded
		out.BytesHeld += s.BytesHeld
		out.MemoryBudget += s.MemoryBudget
		out.Records += s.Records
		out.SkippedRecs += s.SkippedRecs
		out.Evictions += s.Evictions
		out.Reloads += s.Reloads
		out.Pending += s.Pending
		out.AbandonedPurged += s.AbandonedPurged
		if s.LastFollowErr != "" {
			out.LastFollowErr = fmt.Sprintf("shard %d: %s", i, s.LastFollowErr)
		}
	}
	out.CaughtUpAt = earliest(ups)
	if len(ups) == 0 {
		out.CaughtUpAt = time.Now() // a node that holds no shard has nothing to catch up on
	}
	return out
}

// earliest is the shards' caught-up time taken together: the earliest of
// them (each shard has been caught up at some point since), and zero while
// one of them never was. Readiness and Pi-Stale judge by it: the oldest
// shard is how old a read over all of them may be.
func earliest(ts []time.Time) time.Time {
	var at time.Time
	for _, t := range ts {
		if t.IsZero() {
			return time.Time{}
		}
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at
}

// FreshnessOf is the freshness of a read over every shard (the catalog):
// with one shard its own; with several, Applied and Known are sums of the
// shards' positions, so that Lag is the records not applied on any of
// them, and the read is as old as its oldest shard.
func FreshnessOf(sh Shards) Freshness {
	var fs []Freshness
	for _, st := range sh.All() {
		if st.Held() {
			fs = append(fs, st.Freshness())
		}
	}
	return Combine(fs...)
}

// Combine is the freshness of a read over several shards' reads, as
// FreshnessOf: positions summed, as old as the oldest.
func Combine(fs ...Freshness) Freshness {
	switch len(fs) {
	case 0:
		return Freshness{EndKnown: true, CaughtUpAt: time.Now()} // a node that holds no shard lags behind none
	case 1:
		return fs[0]
	}
	out := Freshness{EndKnown: true}
	var ups []time.Time
	for _, f := range fs {
		out.Applied += shard.Raw(f.Applied)
		out.Known += shard.Raw(max(f.Known, f.Applied))
		out.EndKnown = out.EndKnown && f.EndKnown
		ups = append(ups, f.CaughtUpAt)
	}
	out.CaughtUpAt = earliest(ups)
	return out
}

// Subset is the Shards of some of a log's Stores (a node's catalog over
// the shards it serves); For routes nothing, its callers list.
type Subset []*Store

// All is the Stores of the subset.
func (s Subset) All() []*Store { return s }

// For is the first Store; a Subset is for listing, not routing.
func (s Subset) For(string) *Store { return s[0] }

// List is the catalog of every shard, in id order, paged as Store.List
// pages one Store: each shard's next page, merged, cut at the limit; and
// the freshness of the whole read, not the last shard's.
func List(sh Shards, f ListFilter) ([]wire.Info, string, Freshness) {
	all := sh.All()
	if len(all) == 1 {
		return all[0].list(f)
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	f.Limit = min(f.Limit, 1000)
	var out []wire.Info
	more := false
	for _, st := range all {
		page, next, _ := st.list(f)
		out = append(out, page...)
		more = more || next != ""
	}
	out, next := MergePages(out, more, f.Limit)
	return out, next, FreshnessOf(sh)
}

// MergePages is one page of the catalog from the pages of several shards
// (read with the same filter, each up to limit): in id order, cut at
// limit, with the cursor of the next page ("" on the last one: none of
// the shards had more, and nothing was cut).
func MergePages(infos []wire.Info, more bool, limit int) ([]wire.Info, string) {
	slices.SortFunc(infos, func(a, b wire.Info) int { return strings.Compare(a.SessionID, b.SessionID) })
	if len(infos) > limit {
		infos, more = infos[:limit], true
	}
	if more && len(infos) > 0 {
		return infos, infos[len(infos)-1].SessionID
	}
	return infos, ""
}

// Idle is every shard's idle sessions, in id order; see Store.Idle.
func Idle(sh Shards, cutoff time.Time) []string {
	var ids []string
	for _, st := range sh.All() {
		ids = append(ids, st.Idle(cutoff)...)
	}
	if len(sh.All()) > 1 {
		slices.Sort(ids)
	}
	return ids
}

// IdleFor is Store.IdleFor over every shard, in id order.
func IdleFor(sh Shards, cutoffOf func(cwd string) time.Time) []IdleSession {
	var out []IdleSession
	for _, st := range sh.All() {
		out = append(out, st.IdleFor(cutoffOf)...)
	}
	if len(sh.All()) > 1 {
		slices.SortFunc(out, func(a, b IdleSession) int { return strings.Compare(a.ID, b.ID) })
	}
	return out
}

// CatchUp waits until every shard has applied what its log held at the
// call; see Store.CatchUp.
func CatchUp(ctx context.Context, sh Shards) error {
	var errs []error
	for k, st := range sh.All() {
		if err := st.CatchUp(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", k, err))
		}
	}
	return errors.Join(errs...)
}
