package shard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
)

// EpochFunction names the placement of a store whose shard count changed
// (pi-ctl shards migrate): Of over the count of the epoch the
// session id's UUIDv7 time falls in. A node or client that knows only
// Function refuses such a store instead of looking for its sessions
// where they are not.
const EpochFunction = "fnv1a32-uuidv7-epochs"

// Map is where a store's sessions live: epochs, the first from the
// beginning of time, each placing the sessions whose ids were made from
// its start on over its count of shards (Of). A session stays on the
// shard it was placed on for good, so changing the count only adds an
// epoch, which applies to ids made after a time every node and writer
// learns of beforehand; the sessions before it stay where they are. An id
// that is not a UUIDv7 carries no time and belongs to the first epoch.
// The zero Map is a store of one shard.
type Map struct {
	Epochs []Epoch // From ascending; the first's is zero
}

// Epoch is one shard count of a Map and when it began.
type Epoch struct {
	From   time.Time // in milliseconds, as UUIDv7 times are; zero for the first
	Shards int
}

// OneMap is the map of a store that has always had n shards.
func OneMap(n int) Map { return Map{Epochs: []Epoch{{Shards: n}}} }

func (m Map) epochs() []Epoch {
	if len(m.Epochs) == 0 {
		return []Epoch{{Shards: 1}}
	}
	return m.Epochs
}

// Of is the shard of session sid.
func (m Map) Of(sid string) int {
	es := m.epochs()
	e := es[0]
	if len(es) > 1 {
		if t, ok := IDTime(sid); ok {
			for _, x := range es[1:] {
				if t.Before(x.From) {
					break
				}
				e = x
			}
		}
	}
	return Of(sid, e.Shards)
}

// Streams is how many shard streams the map uses: the most any epoch has.
func (m Map) Streams() int {
	n := 0
	for _, e := range m.epochs() {
		n = max(n, e.Shards)
	}
	return n
}

// Current is the shard count of the last epoch: where new sessions go.
func (m Map) Current() int {
	es := m.epochs()
	return es[len(es)-1].Shards
}

// Function is the placement function the map needs (Function for a
// map of one epoch).
func (m Map) Function() string {
	if len(m.epochs()) > 1 {
		return EpochFunction
	}
	return Function
}

// Equal reports whether m and o place every session alike.
func (m Map) Equal(o Map) bool { return m.String() == o.String() }

// String is the map's encoding (ParseMap): the first epoch's count, then
// "count@time" for each later one, comma-separated, times in RFC 3339 with
// milliseconds: "1,4@2026-12-02T04:00:00.000Z".
func (m Map) String() string {
	var b strings.Builder
	for i, e := range m.epochs() {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(strconv.Itoa(e.Shards))
		if i > 0 {
			b.WriteString("@" + e.From.UTC().Format(epochTime))
		}
	}
	return b.String()
}

const epochTime = "2006-01-02T15:04:05.000Z07:00"

// ParseMap reads String's encoding, checking it (Validate).
func ParseMap(s string) (Map, error) {
	var m Map
	for i, part := range strings.Split(s, ",") {
		count, at, dated := strings.Cut(part, "@")
		n, err := strconv.Atoi(count)
		if err != nil {
			return Map{}, fmt.Errorf("%w: shard map %q: epoch %d: %q is not a shard count", wire.ErrInvalid, s, i, count)
		}
		e := Epoch{Shards: n}
		if dated != (i > 0) {
			return Map{}, fmt.Errorf("%w: shard map %q: epoch %d: every epoch but the first has a start (count@time), the first none", wire.ErrInvalid, s, i)
		}
		if dated {
			if e.From, err = time.Parse(time.RFC3339Nano, at); err != nil {
				return Map{}, fmt.Errorf("%w: shard map %q: epoch %d: start %q: %v", wire.ErrInvalid, s, i, at, err)
			}
		}
		m.Epochs = append(m.Epochs, e)
	}
	return m, m.Validate()
}

// Validate checks the map: counts from 1 to Max, starts ascending.
func (m Map) Validate() error {
	for i, e := range m.Epochs {
		if err := ValidCount(e.Shards); err != nil {
			return fmt.Errorf("shard map %s: epoch %d: %w", m, i, err)
		}
		switch {
		case i == 0 && !e.From.IsZero():
			return fmt.Errorf("%w: shard map %s: the first epoch starts at the beginning", wire.ErrInvalid, m)
		case i > 0 && !e.From.After(m.Epochs[i-1].From):
			return fmt.Errorf("%w: shard map %s: epoch %d does not start after the one before", wire.ErrInvalid, m, i)
		}
	}
	return nil
}

// Grow returns m with an epoch of n shards from at on (truncated to the
// millisecond, as UUIDv7 times are).
func (m Map) Grow(n int, at time.Time) (Map, error) {
	at = at.UTC().Truncate(time.Millisecond)
	es := m.epochs()
	if last := es[len(es)-1]; len(es) > 1 && !at.After(last.From) {
		return Map{}, fmt.Errorf("%w: an epoch must start after the last one (%s), not at %s", wire.ErrInvalid, last.From.Format(epochTime), at.Format(epochTime))
	}
	out := Map{Epochs: append(append([]Epoch(nil), es...), Epoch{From: at, Shards: n})}
	return out, out.Validate()
}

// IDTime is the time a UUIDv7 session id was made (its first 48 bits, unix
// milliseconds); false for an id that is not a UUIDv7.
func IDTime(sid string) (time.Time, bool) {
	if len(sid) != 36 || sid[14] != '7' || sid[8] != '-' {
		return time.Time{}, false
	}
	ms, err := strconv.ParseUint(sid[:8]+sid[9:13], 16, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(ms)), true
}

// Extends checks that next keeps every epoch of cur (so every session of
// cur is where it was) and only adds later ones.
func Extends(cur, next Map) error {
	ce, ne := cur.epochs(), next.epochs()
	if len(ne) < len(ce) || !slices.EqualFunc(ce, ne[:len(ce)], func(a, b Epoch) bool { return a.Shards == b.Shards && a.From.Equal(b.From) }) {
		return fmt.Errorf("%w: shard map %s does not extend %s: sessions placed by it would move", wire.ErrConflict, next, cur)
	}
	return nil
}
