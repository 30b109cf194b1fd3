package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/pifleet/sessionlog/internal/buildinfo"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/wire"
)

// readyLag is how long the Store may have been behind the log and still
// count as ready: a node that is applying a burst is serving, one that has
// not caught up for longer is not.
const readyLag = time.Second

// readyTimeout bounds the backend check of /readyz; probes want an answer.
const readyTimeout = 2 * time.Second

// Headers of every read: how far this node has applied the log, how far
// behind the log's end it is (in a mirror region, the home's end), and a
// flag when it has not been caught up for longer than readyLag (a lagging
// or partitioned node still serves what it has; clients decide).
const (
	hdrApplied = "Pi-Applied-Seq"
	hdrStale   = "Pi-Stale"
	hdrLag     = "Pi-Lag"
	// hdrNode names the node that answered, on every reply of both
	// transports: over NATS any pi-node of the queue group may answer, and
	// read your writes without minSeq holds on the node that acknowledged
	// the write.
	hdrNode = "Pi-Node"
)

// readHeaders returns the headers of a read that reflected f:
// Pi-Applied-Seq, Pi-Lag ("unknown" while the node has not learned the
// log's end: a number would be a guess), and Pi-Stale when stale.
func (s *Server) readHeaders(f store.Freshness) map[string][]string {
	lag := "unknown"
	if f.EndKnown {
		lag = strconv.FormatUint(f.Lag(), 10)
	}
	h := map[string][]string{hdrApplied: {strconv.FormatUint(f.Applied, 10)}, hdrLag: {lag}}
	if at := f.CaughtUpAt; at.IsZero() || s.cfg.Now().Sub(at) > readyLag {
		h[hdrStale] = []string{"true"}
	}
	return h
}

func (s *Server) status(ctx context.Context, _ *wire.StatusRequest) (reply, error) {
	st := store.StatsOf(s.svc.Store)
	b := buildinfo.Get()
	out := wire.StatusReply{Node: s.cfg.NodeName, Service: ServiceName, Version: ServiceVersion,
		Build: wire.BuildStatus{Version: b.Version, Revision: b.Revision, Go: b.Go, Modified: b.Modified}, Store: wire.StoreStatus{
			Applied: st.Applied, LogLastSeq: st.LogLastSeq, Lag: st.Lag,
			Sessions: st.Sessions, SessionsLoaded: st.Loaded, BytesHeld: st.BytesHeld,
			Records: st.Records, SkippedRecords: st.SkippedRecs, Evictions: st.Evictions, Reloads: st.Reloads,
			LastFollowError: st.LastFollowErr,
		}, Insecure: s.cfg.Insecure, EncryptedAtRest: s.cfg.EncryptedAtRest}
	if ss := store.SearchStatsOf(s.svc.Store); ss.Indexes > 0 {
		out.Store.Search = &wire.SearchStatus{Applied: ss.Applied, Lag: ss.Lag, CaughtUp: ss.CaughtUp}
	}
	if !st.CaughtUpAt.IsZero() {
		t := st.CaughtUpAt.UTC()
		out.Store.CaughtUpAt = &t
	}
	if all := s.svc.Store.All(); len(all) > 1 {
		for k, sst := range all {
			ks := sst.Stats()
			ss := wire.ShardStoreStatus{Shard: k, Applied: ks.Applied, LogLastSeq: ks.LogLastSeq,
				Lag: ks.Lag, Sessions: ks.Sessions, BytesHeld: ks.BytesHeld, MemoryBudget: ks.MemoryBudget}
			if h := s.cfg.Holding; h != nil {
				switch {
				case h.Serves(k):
					ss.Holding = wire.HoldServing
				case sst.Held():
					ss.Holding = wire.HoldCatchingUp
				default:
					ss.Holding = wire.HoldElsewhere
				}
			}
			out.Store.Shards = append(out.Store.Shards, ss)
		}
	}
	if s.cfg.Status != nil {
		js, err := s.cfg.Status(ctx)
		if st, ok := js.(wire.JetStreamStatus); ok && err == nil {
			out.Cluster = wire.ClusterOf(st)
		}
		if err != nil {
			js = map[string]string{"error": err.Error()}
		}
		if principalOf(ctx).has(ScopeAdmin) {
			out.JetStream = js
		}
	}
	return jsonReply(out)
}

// ready reports why the node should not get traffic, or nil: the backend
// hook first (JetStream reachable, stream and bucket present), then the
// Store, which must have caught up with the log within readyLag.
func (s *Server) ready(ctx context.Context) error {
	if s.cfg.Ready != nil {
		cctx, cancel := context.WithTimeout(ctx, readyTimeout)
		err := s.cfg.Ready(cctx)
		cancel()
		if err != nil {
			return fmt.Errorf("backend: %w", err)
		}
	}
	st := store.StatsOf(s.servedStores())
	if st.CaughtUpAt.IsZero() {
		return fmt.Errorf("store: has not caught up with the log yet (applied %d of %d)", st.Applied, st.LogLastSeq)
	}
	if behind := s.cfg.Now().Sub(st.CaughtUpAt); st.Lag > 0 && behind > readyLag {
		return fmt.Errorf("store: %d records behind the log for %v", st.Lag, behind.Round(time.Millisecond))
	}
	return nil
}

// servedStores is what readiness judges: every Store; with a Holding, the
// shards this node serves (a shard it is taking over is served by its
// other holders meanwhile, and a node catching up on one must not leave
// service for it).
func (s *Server) servedStores() store.Shards {
	if s.cfg.Holding == nil {
		return s.svc.Store
	}
	var out store.Subset
	for k, st := range s.svc.Store.All() {
		if s.cfg.Holding.Serves(k) {
			out = append(out, st)
		}
	}
	return out
}

func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", wire.ContentTypeJSON)
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if err := s.ready(r.Context()); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, wire.ErrorBody{Error: wire.ErrorDetail{Code: wire.CodeUnavailable, Message: err.Error()}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
