package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
)

// readyLag is how long the Store may have been behind the log and still
// count as ready: a node that is applying a burst is serving, one that has
// not caught up for longer is not.
const readyLag = time.Second

// readyTimeout bounds the backend check of /readyz; probes want an answer.
const readyTimeout = 2 * time.Second

// StatusReply is the /v1/status response.
type StatusReply struct {
	Node    string      `json:"node"`
	Service string      `json:"service"`
	Version string      `json:"version"`
	Store   StoreStatus `json:"store"`
	// JetStream is Config.Status's answer (mode, stream replicas, leader,
	// messages, bytes), or {"error": "..."} when it failed: status must
	// still answer when the backend is what is broken.
	JetStream any `json:"jetstream,omitempty"`
}

// StoreStatus is the Store's part of the status: how far this node has
// applied the log and what it holds in memory.
type StoreStatus struct {
	Applied         uint64     `json:"applied"`
	LogLastSeq      uint64     `json:"logLastSeq"`
	Lag             uint64     `json:"lag"`
	CaughtUpAt      *time.Time `json:"caughtUpAt"`
	Sessions        int        `json:"sessions"`
	SessionsLoaded  int        `json:"sessionsLoaded"`
	BytesHeld       int64      `json:"bytesHeld"`
	Records         uint64     `json:"records"`
	SkippedRecords  uint64     `json:"skippedRecords"`
	Evictions       uint64     `json:"evictions"`
	Reloads         uint64     `json:"reloads"`
	LastFollowError string     `json:"lastFollowError,omitempty"`
}

// Headers of every read: how far this node has applied the log, how far
// behind the log's end it is (in a mirror region, the home's end), and a
// flag when it has not been caught up for longer than readyLag (a lagging
// or partitioned node still serves what it has; clients decide).
const (
	hdrApplied = "Pi-Applied-Seq"
	hdrStale   = "Pi-Stale"
	hdrLag     = "Pi-Lag"
)

// readHeaders returns the headers of a read: Pi-Applied-Seq, Pi-Lag, and
// Pi-Stale when stale.
func (s *Server) readHeaders() map[string][]string {
	seq, at, lag := s.svc.Store.Freshness()
	h := map[string][]string{hdrApplied: {strconv.FormatUint(seq, 10)}, hdrLag: {strconv.FormatUint(lag, 10)}}
	if at.IsZero() || s.cfg.Now().Sub(at) > readyLag {
		h[hdrStale] = []string{"true"}
	}
	return h
}

func (s *Server) status(ctx context.Context, _ *request) (reply, error) {
	st := s.svc.Store.Stats()
	out := StatusReply{Node: s.cfg.NodeName, Service: ServiceName, Version: ServiceVersion, Store: StoreStatus{
		Applied: st.Applied, LogLastSeq: st.LogLastSeq, Lag: st.Lag,
		Sessions: st.Sessions, SessionsLoaded: st.Loaded, BytesHeld: st.BytesHeld,
		Records: st.Records, SkippedRecords: st.SkippedRecs, Evictions: st.Evictions, Reloads: st.Reloads,
		LastFollowError: st.LastFollowErr,
	}}
	if !st.CaughtUpAt.IsZero() {
		t := st.CaughtUpAt.UTC()
		out.Store.CaughtUpAt = &t
	}
	if s.cfg.Status != nil {
		js, err := s.cfg.Status(ctx)
		if err != nil {
			js = map[string]string{"error": err.Error()}
		}
		out.JetStream = js
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
	st := s.svc.Store.Stats()
	if st.CaughtUpAt.IsZero() {
		return fmt.Errorf("store: has not caught up with the log yet (applied %d of %d)", st.Applied, st.LogLastSeq)
	}
	if behind := s.cfg.Now().Sub(st.CaughtUpAt); st.Lag > 0 && behind > readyLag {
		return fmt.Errorf("store: %d records behind the log for %v", st.Lag, behind.Round(time.Millisecond))
	}
	return nil
}

func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", ctypeJSON)
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if err := s.ready(r.Context()); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, ErrorBody{ErrorDetail{Code: CodeUnavailable, Message: err.Error()}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// JetStreamStatus is what pi-node reports under "jetstream" in /v1/status
// (Config.Status), and what pi-ctl status reads back. Error alone is set
// when the node could not ask JetStream.
type JetStreamStatus struct {
	Error     string       `json:"error,omitempty"`
	Mode      string       `json:"mode"` // embedded, embedded-cluster, external
	Server    string       `json:"server"`
	Connected string       `json:"connected"`
	Cluster   string       `json:"cluster,omitempty"`
	Stream    StreamStatus `json:"stream"`
	Bucket    string       `json:"bucket"`
	// Region is the cross-region state: this node's region and role, the
	// home, the streams it reads and writes, and its mirror's lag.
	Region *wire.RegionStatus `json:"region,omitempty"`
}

// StreamStatus describes the session stream as its leader reports it.
type StreamStatus struct {
	Name      string       `json:"name"`
	Replicas  int          `json:"replicas"`
	Leader    string       `json:"leader,omitempty"`
	Messages  uint64       `json:"messages"`
	Bytes     uint64       `json:"bytes"`
	FirstSeq  uint64       `json:"firstSeq"`
	LastSeq   uint64       `json:"lastSeq"`
	Subjects  uint64       `json:"subjects"`
	Followers []PeerStatus `json:"followers,omitempty"`
}

// PeerStatus is one replica of the stream besides the leader.
type PeerStatus struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	Offline bool   `json:"offline,omitempty"`
	Lag     uint64 `json:"lag"`
	Active  string `json:"lastSeen"`
}
