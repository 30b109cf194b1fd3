package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Snapshot is what the server says of a stream it snapshots, as the
// server's own JSON: kept verbatim, so that a restore hands the server
// back every field of the configuration, also those this client's
// library does not know.
type Snapshot struct {
	Config json.RawMessage `json:"config"`
	State  json.RawMessage `json:"state"`
}

// SnapshotState is the part of a snapshot's state a backup reports.
type SnapshotState struct {
	Messages    uint64 `json:"messages"`
	Bytes       uint64 `json:"bytes"`
	FirstSeq    uint64 `json:"first_seq"`
	LastSeq     uint64 `json:"last_seq"`
	NumSubjects uint64 `json:"num_subjects"`
}

// apiReply is the error member of a JetStream API response, decoded into
// nats.go's own type so that translate maps it like every other.
type apiReply struct {
	Error *jetstream.APIError `json:"error"`
}

func (a apiReply) err(what string) error {
	if a.Error == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, translate(a.Error, wire.ErrExists))
}

// snapshotIdle bounds the wait for the next chunk of a snapshot: the
// server gives up on a receiver after 5 s without acks, so a longer
// silence means the snapshot failed.
const snapshotIdle = 30 * time.Second

// SnapshotStream streams a consistent snapshot of stream (JetStream's own
// snapshot API, the one `nats stream backup` uses: a compressed archive of
// the stream's files, made by its leader) to w, with every message's
// checksum verified by the server first. Consumers are left out: the
// deployment's are ephemeral. progress, if set, is told the bytes written
// so far.
func SnapshotStream(ctx context.Context, js jetstream.JetStream, stream string, w io.Writer, progress func(int64)) (Snapshot, error) {
	nc := js.Conn()
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot of %s: %w", stream, err)
	}
	defer sub.Unsubscribe()
	// A window of chunks is in flight: never drop one as a slow consumer.
	_ = sub.SetPendingLimits(-1, -1)

	// In a cluster only the stream's leader answers a snapshot request, so
	// one for a missing stream gets no answer at all: ask first, within the
	// same bound (a stream without a leader answers nothing either, and the
	// caller's deadline may be the whole backup's).
	ictx, icancel := context.WithTimeout(ctx, snapshotIdle)
	_, err = js.Stream(ictx, stream)
	icancel()
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot of %s: %w", stream, translate(err, wire.ErrExists))
	}
	req, _ := json.Marshal(map[string]any{"deliver_subject": inbox, "no_consumers": true, "jsck": true})
	rctx, cancel := context.WithTimeout(ctx, snapshotIdle)
	resp, err := nc.RequestWithContext(rctx, apiPrefix(js)+"STREAM.SNAPSHOT."+stream, req)
	cancel()
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot of %s: %w", stream, translate(err, wire.ErrExists))
	}
	var r struct {
		apiReply
		Snapshot
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot of %s: the server's answer: %w", stream, err)
	}
	if err := r.err("snapshot of " + stream); err != nil {
		return Snapshot{}, err
	}
	var n int64
	for {
		cctx, cancel := context.WithTimeout(ctx, snapshotIdle)
		m, err := sub.NextMsgWithContext(cctx)
		cancel()
		if err != nil {
			return Snapshot{}, fmt.Errorf("snapshot of %s after %d bytes: %w", stream, n, translate(err, wire.ErrExists))
		}
		if len(m.Data) == 0 {
			// The end: status 204, or why the server stopped.
			if s := m.Header.Get("Status"); s != "" && s != "204" {
				return Snapshot{}, fmt.Errorf("snapshot of %s after %d bytes: %w: the server stopped: %s %s",
					stream, n, wire.ErrUnavailable, s, m.Header.Get("Description"))
			}
			return r.Snapshot, nil
		}
		if _, err := w.Write(m.Data); err != nil {
			return Snapshot{}, fmt.Errorf("snapshot of %s: %w", stream, err)
		}
		n += int64(len(m.Data))
		if progress != nil {
			progress(n)
		}
		// The ack is the server's flow control: it sends a window ahead.
		if m.Reply != "" {
			if err := m.Respond(nil); err != nil {
				return Snapshot{}, fmt.Errorf("snapshot of %s: ack: %w", stream, err)
			}
		}
	}
}

// restoreChunk is the size of the pieces a restore sends: the server's
// own snapshot chunk size.
const restoreChunk = 128 << 10

// RestoreStream creates stream from a snapshot SnapshotStream made: the
// configuration and state it recorded, and the archive read from r. The
// stream must not exist (ErrExists). It returns the restored stream's
// state as the server reports it once the stream is up.
func RestoreStream(ctx context.Context, js jetstream.JetStream, stream string, snap Snapshot, r io.Reader, progress func(int64)) (SnapshotState, error) {
	nc := js.Conn()
	req, err := json.Marshal(snap)
	if err != nil {
		return SnapshotState{}, fmt.Errorf("restore of %s: %w", stream, err)
	}
	resp, err := askRestore(ctx, nc, apiPrefix(js)+"STREAM.RESTORE."+stream, req)
	if err != nil {
		return SnapshotState{}, fmt.Errorf("restore of %s: %w", stream, translate(err, wire.ErrExists))
	}
	var start struct {
		apiReply
		DeliverSubject string `json:"deliver_subject"`
	}
	if err := json.Unmarshal(resp.Data, &start); err != nil {
		return SnapshotState{}, fmt.Errorf("restore of %s: the server's answer: %w", stream, err)
	}
	if err := start.err("restore of " + stream); err != nil {
		return SnapshotState{}, err
	}
	if start.DeliverSubject == "" {
		return SnapshotState{}, fmt.Errorf("restore of %s: %w: the server named no subject for the chunks", stream, wire.ErrUnavailable)
	}
	buf := make([]byte, restoreChunk)
	var n int64
	for {
		k, rerr := io.ReadFull(r, buf)
		if k > 0 {
			// Each chunk is a request: the server answers once it has
			// taken it in, empty, or with why it failed.
			m, err := requestChunk(ctx, nc, start.DeliverSubject, buf[:k])
			if err != nil {
				return SnapshotState{}, fmt.Errorf("restore of %s after %d bytes: %w", stream, n, translate(err, wire.ErrExists))
			}
			if len(m.Data) > 0 {
				var a apiReply
				if json.Unmarshal(m.Data, &a) == nil && a.Error != nil {
					return SnapshotState{}, a.err(fmt.Sprintf("restore of %s after %d bytes", stream, n))
				}
			}
			n += int64(k)
			if progress != nil {
				progress(n)
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return SnapshotState{}, fmt.Errorf("restore of %s: %w", stream, rerr)
		}
	}
	// An empty chunk ends the transfer; the answer comes once the stream
	// is restored (on every replica's server), which takes a while for a
	// big one.
	m, err := requestChunk(ctx, nc, start.DeliverSubject, nil)
	if err != nil {
		return SnapshotState{}, fmt.Errorf("restore of %s: the end: %w", stream, translate(err, wire.ErrExists))
	}
	var done struct {
		apiReply
		State SnapshotState `json:"state"`
	}
	if err := json.Unmarshal(m.Data, &done); err != nil {
		return SnapshotState{}, fmt.Errorf("restore of %s: the server's answer: %w", stream, err)
	}
	if err := done.err("restore of " + stream); err != nil {
		return SnapshotState{}, err
	}
	if err := awaitLeader(ctx, js, stream); err != nil {
		return SnapshotState{}, fmt.Errorf("restore of %s: %w", stream, err)
	}
	return done.State, nil
}

// awaitLeader returns once the restored stream has a leader: the server
// answers the restore when every replica holds it, and a replicated
// stream then elects its leader — until it has one, the gets and infos
// that only a leader answers are dropped, and a reader with a long
// deadline waits it all out.
func awaitLeader(ctx context.Context, js jetstream.JetStream, stream string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		s, err := js.Stream(ictx, stream)
		cancel()
		if err == nil {
			if c := s.CachedInfo().Cluster; c == nil || c.Leader != "" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the restored stream elected no leader: %w", translate(ctx.Err(), wire.ErrConflict))
		case <-tick.C:
		}
	}
}

// askRestore sends the restore request, again each restoreAsk without an
// answer, until ctx ends. Only the meta leader answers it (nats-server
// jsStreamRestoreRequest): with none, or one being elected (a cluster
// under load), the request is dropped, not refused — one ask alone waited
// out the whole ctx (a CI run's TestSnapshotRestore). Asked again after a
// lost answer to a restore that did begin, the server says the stream is
// being restored, and that is returned.
func askRestore(ctx context.Context, nc *nats.Conn, subj string, req []byte) (*nats.Msg, error) {
	for {
		actx, cancel := context.WithTimeout(ctx, restoreAsk)
		m, err := nc.RequestWithContext(actx, subj, req)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
			return m, err
		}
	}
}

// restoreAsk is how long a restore request waits for the meta leader's
// answer before it is sent again.
const restoreAsk = 10 * time.Second

// requestChunk sends one restore chunk; the last one waits longest. In a
// cluster the server that took the restore request may answer it before
// its subscription for the chunks has reached the server pi-ctl is
// connected to: "no responders" then means nobody got the chunk, so it is
// sent again, for up to about 2 s.
func requestChunk(ctx context.Context, nc *nats.Conn, subj string, data []byte) (*nats.Msg, error) {
	wait := 30 * time.Second
	if data == nil {
		wait = 5 * time.Minute
	}
	backoff := 10 * time.Millisecond
	for start := time.Now(); ; {
		cctx, cancel := context.WithTimeout(ctx, wait)
		m, err := nc.RequestWithContext(cctx, subj, data)
		cancel()
		if !errors.Is(err, nats.ErrNoResponders) || time.Since(start) > chunkInterest ||
			!session.Sleep(ctx, &backoff, 200*time.Millisecond) {
			return m, err
		}
	}
}

// chunkInterest bounds how long a restore waits for the interest in its
// chunks to spread over the cluster's routes.
const chunkInterest = 2 * time.Second

// WithReplicas returns the snapshot with its configuration's replica
// count set to n: a backup of a 3-node deployment restored into one
// server, or the other way round.
func (s Snapshot) WithReplicas(n int) (Snapshot, error) {
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(s.Config, &cfg); err != nil {
		return Snapshot{}, fmt.Errorf("the snapshot's stream configuration: %w", err)
	}
	cfg["num_replicas"] = json.RawMessage(fmt.Sprint(n))
	b, err := json.Marshal(cfg)
	if err != nil {
		return Snapshot{}, err
	}
	s.Config = b
	return s, nil
}

// StateOf decodes the snapshot's state.
func (s Snapshot) StateOf() (SnapshotState, error) {
	var st SnapshotState
	if err := json.Unmarshal(s.State, &st); err != nil {
		return SnapshotState{}, fmt.Errorf("the snapshot's stream state: %w", err)
	}
	return st, nil
}

// ReplaceStream deletes stream if it exists, waits until it is gone, and
// restores it from snap with the archive open returns. A client that
// creates the stream again meanwhile (a pi-node provisioning it, empty)
// gets its stream replaced too, on up to 10 tries; one that holds data by
// then is not deleted again, and the restore fails.
func ReplaceStream(ctx context.Context, js jetstream.JetStream, stream string, snap Snapshot, open func() (io.ReadCloser, error)) (SnapshotState, error) {
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if err := deleteStream(ctx, js, stream); err != nil {
			return SnapshotState{}, err
		}
		r, err := open()
		if err != nil {
			return SnapshotState{}, err
		}
		got, err := RestoreStream(ctx, js, stream, snap, r, nil)
		r.Close()
		if !errors.Is(err, wire.ErrExists) || attempt == 9 || !session.Sleep(ctx, &backoff, 2*time.Second) {
			return got, err
		}
		if s, serr := js.Stream(ctx, stream); serr == nil && s.CachedInfo().State.Msgs > 0 {
			return got, fmt.Errorf("stream %s was made again meanwhile and holds data: %w", stream, err)
		}
	}
}

// deleteStream deletes a stream and waits until it is gone: a cluster
// applies the deletion after it answers, and the name is free only then.
func deleteStream(ctx context.Context, js jetstream.JetStream, stream string) error {
	if err := js.DeleteStream(ctx, stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("delete stream %s: %w", stream, translate(err, wire.ErrConflict))
	}
	backoff := 50 * time.Millisecond
	for {
		if _, err := js.Stream(ctx, stream); errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil
		}
		if !session.Sleep(ctx, &backoff, time.Second) {
			return fmt.Errorf("delete stream %s: %w", stream, translate(ctx.Err(), wire.ErrConflict))
		}
	}
}
