package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamState is what Probe learns of one stream of a region.
type StreamState struct {
	Name      string
	Exists    bool   // false only when the meta layer says there is no such stream
	Reachable bool   // its leader answered: the region is up
	Problem   string // why it is not reachable
	Sealed    bool   // fenced: it refuses writes for good
	MirrorOf  string // the origin, for a mirror
	Subjects  []string
	LastSeq   uint64
	Lag       uint64        // a mirror's messages not yet received from its origin
	Active    time.Duration // a mirror: since it last heard from its origin
	MirrorErr string        // a mirror: its last sourcing error
	Leader    string
	Cluster   string
}

// Probe asks for the state of a stream. A stream whose replicas are all down
// (its region is lost: "stream is offline"), or that no one answers for,
// comes back as existing and unreachable with no error; errors are for
// requests that could not be judged (a misconfiguration, a bug).
func Probe(ctx context.Context, js jetstream.JetStream, stream string) (StreamState, error) {
	st := StreamState{Name: stream}
	s, err := js.Stream(ctx, stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		st.Problem = "no such stream"
		return st, nil
	case apiCode(err) == codeStreamOffline || apiCode(err) == codeStreamOfflineReason:
		st.Exists, st.Problem = true, "offline: every replica is down"
		return st, nil
	case isTransport(err) || apiCode(err) == codeClusterNotAvail:
		st.Exists, st.Problem = true, "no answer: "+err.Error()
		return st, nil
	case err != nil:
		return st, fmt.Errorf("probe %s: %w", stream, err)
	}
	info := s.CachedInfo()
	st.Exists, st.Reachable = true, true
	st.Sealed, st.Subjects, st.LastSeq = info.Config.Sealed, info.Config.Subjects, info.State.LastSeq
	if ci := info.Cluster; ci != nil {
		st.Leader, st.Cluster = ci.Leader, ci.Name
	}
	if err := Leaderless(info); err != nil {
		st.Reachable, st.Problem = false, err.Error()
	}
	if info.Config.Mirror != nil {
		st.MirrorOf = info.Config.Mirror.Name
	}
	if m := info.Mirror; m != nil {
		st.Lag, st.Active = m.Lag, m.Active
		if m.Error != nil {
			st.MirrorErr = m.Error.Error()
		}
	}
	return st, nil
}

// Promote turns cfg's stream and cursor bucket, mirrors placed in cluster,
// into primaries: the mirror configuration is removed (nats-server 2.12+
// allows exactly that change) and the wire contract's subjects and settings
// are set. Every message stays at its sequence and new writes continue after
// the last. Promoting a primary again changes nothing, so a failover that
// stopped half-way can be run again.
func Promote(ctx context.Context, js jetstream.JetStream, cfg Config, cluster string) error {
	return PromoteShards(ctx, js, cfg, cluster, 1)
}

// Fence seals cfg's stream and cursor bucket: from then on they refuse
// every write and delete, so an old primary that comes back gains nothing
// while its entries are merged into the new one. Sealing is final; the
// fenced assets are replaced by mirrors afterwards (RecreateMirror).
func Fence(ctx context.Context, js jetstream.JetStream, cfg Config) error {
	return FenceShards(ctx, js, cfg, 1)
}

// fence seals the streams names.
func fence(ctx context.Context, js jetstream.JetStream, cfg Config, names []string) error {
	for _, name := range names {
		if err := retryProvision(ctx, logger(cfg), "fence "+name, func(ctx context.Context) error {
			s, err := js.Stream(ctx, name)
			if err != nil {
				return err
			}
			sc := s.CachedInfo().Config
			if sc.Sealed {
				return nil
			}
			sc.Sealed = true
			_, err = js.UpdateStream(ctx, sc)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// RecreateMirror replaces cfg's stream and bucket with new mirrors of
// origin's, placed in cluster. Whatever cfg's assets held is deleted, so
// call it only once that is safe elsewhere (failback merges it first), and
// only while the region is reachable: a stream deleted while its region is
// down is deleted from that region's disks when it comes back.
func RecreateMirror(ctx context.Context, js jetstream.JetStream, cfg, origin Config, cluster string) error {
	return RecreateMirrorShards(ctx, js, cfg, origin, cluster, 1)
}

// recreate replaces each stream of wants (mirrors) unless it is that
// mirror already.
func recreate(ctx context.Context, js jetstream.JetStream, cfg Config, wants []jetstream.StreamConfig) error {
	for _, want := range wants {
		if err := retryProvision(ctx, logger(cfg), "recreate "+want.Name, func(ctx context.Context) error {
			s, err := js.Stream(ctx, want.Name)
			if err == nil && s.CachedInfo().Config.Mirror != nil && s.CachedInfo().Config.Mirror.Name == want.Mirror.Name {
				return nil // done by an earlier run
			}
			if err == nil {
				err = js.DeleteStream(ctx, want.Name)
			}
			if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				return err
			}
			_, err = js.CreateStream(ctx, want)
			if apiCode(err) == codeStreamCreate {
				// The server removes an account's stream directory when
				// its last stream goes; a create at that moment fails
				// once ("error creating store").
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
				_, err = js.CreateStream(ctx, want)
			}
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// WaitMirror waits until the mirror stream holds its origin up to seq
// (mirrors keep their origin's sequences), polling its state; ctx bounds
// the wait.
func WaitMirror(ctx context.Context, js jetstream.JetStream, stream string, seq uint64) error {
	wait := 20 * time.Millisecond
	for {
		st, err := Probe(ctx, js, stream)
		if err == nil && st.Reachable && st.LastSeq >= seq {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mirror %s has not reached sequence %d (at %d, lag %d, %s): %w", stream, seq, st.LastSeq, st.Lag, st.MirrorErr, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}
