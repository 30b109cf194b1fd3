//go:build linux

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
)

// mustDo sends a request that must answer want; it returns the body and
// headers.
func mustDo(t *testing.T, method, url string, body []byte, want int) ([]byte, http.Header) {
	t.Helper()
	st, hdr, data, err := proctest.Do(context.Background(), proctest.ProbeClient, method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if st != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, url, st, want, data)
	}
	return data, hdr
}

// nodeStatus is the part of /v1/status these tests read.
type nodeStatus struct {
	Node  string `json:"node"`
	Store struct {
		Applied        uint64 `json:"applied"`
		LogLastSeq     uint64 `json:"logLastSeq"`
		Lag            uint64 `json:"lag"`
		Sessions       int    `json:"sessions"`
		SkippedRecords uint64 `json:"skippedRecords"`
		// LastFollowError names its shard on a sharded store.
		LastFollowError string `json:"lastFollowError"`
		// With --shards (PI_NODE_SHARDS): each shard's Store, its
		// sequences qualified.
		Shards []struct {
			Applied    uint64 `json:"applied"`
			LogLastSeq uint64 `json:"logLastSeq"`
			// Holding: "elsewhere" on a node that does not hold the shard
			// (--hold below the node count): it follows nothing there.
			Holding string `json:"holding"`
		} `json:"shards"`
	} `json:"store"`
	JetStream struct {
		Error   string `json:"error"` // set instead of the rest when the backend failed
		Mode    string `json:"mode"`
		Server  string `json:"server"`
		Cluster string `json:"cluster"`
		Stream  struct {
			Replicas  int    `json:"replicas"`
			Leader    string `json:"leader"`
			Messages  uint64 `json:"messages"`
			LastSeq   uint64 `json:"lastSeq"`
			Followers []struct {
				Name     string  `json:"name"`
				Current  bool    `json:"current"`
				Offline  bool    `json:"offline"`
				Lag      *uint64 `json:"lag"` // a pointer to tell "0" from "absent"
				LastSeen string  `json:"lastSeen"`
				State    string  `json:"state"`
			} `json:"followers"`
		} `json:"stream"`
		// With --shards: every shard's stream, its own sequences.
		Shards []struct {
			Name    string `json:"name"`
			Leader  string `json:"leader"`
			LastSeq uint64 `json:"lastSeq"`
		} `json:"shards"`
		ShardMap string `json:"shardMap"`
	} `json:"jetstream"`
}

// status fetches a node's /v1/status.
func status(base string) (nodeStatus, error) {
	var s nodeStatus
	if err := proctest.GetJSON(base+"/v1/status", &s); err != nil {
		return s, err
	}
	if s.JetStream.Error != "" {
		return s, fmt.Errorf("status: jetstream: %s", s.JetStream.Error)
	}
	return s, nil
}

// createBody is the JSON body creating session sid with no entries; the
// header is chosen by the client, so a retried create is recognizable.
func createBody(sid, cwd string, at time.Time) []byte {
	b, _ := json.Marshal(map[string]any{"header": map[string]any{
		"type": "session", "version": 3, "id": sid, "cwd": cwd,
		"timestamp": proctest.Stamp(at),
	}, "entries": []any{}})
	return b
}

// retryable reports whether an answer means "try again, maybe elsewhere":
// JetStream without quorum (503), a node stopping, a gateway timeout, or
// a transport error (timeout, connection refused or reset).
func retryable(status int, err error) bool {
	return err != nil || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
}

// createSession creates sid (header only) through any of bases, retrying
// across them; a retry that finds the session already there (409) checks
// that it is ours.
func createSession(ctx context.Context, hc *http.Client, bases []string, first int, sid, cwd string, at time.Time) (uint64, error) {
	body := createBody(sid, cwd, at)
	var last string
	for attempt := 0; ctx.Err() == nil; attempt++ {
		base := bases[(first+attempt)%len(bases)]
		st, _, data, err := proctest.Do(ctx, hc, http.MethodPost, base+"/v1/sessions", body)
		switch {
		case err == nil && st == http.StatusCreated:
			var wr proctest.WriteResult
			if err := json.Unmarshal(data, &wr); err != nil {
				return 0, err
			}
			return wr.LastSeq, nil
		case err == nil && st == http.StatusConflict && attempt > 0:
			// An earlier attempt may have landed with its reply lost:
			// the API documents reading the session to find out.
			st, _, got, err := proctest.Do(ctx, hc, http.MethodGet, base+"/v1/sessions/"+sid, nil)
			var info struct {
				LastSeq uint64 `json:"lastSeq"`
				Header  struct {
					ID        string `json:"id"`
					Cwd       string `json:"cwd"`
					Timestamp string `json:"timestamp"`
				} `json:"header"`
			}
			if err == nil && st == http.StatusOK && json.Unmarshal(got, &info) == nil &&
				info.Header.ID == sid && info.Header.Cwd == cwd && info.Header.Timestamp == proctest.Stamp(at) {
				return info.LastSeq, nil
			}
			last = fmt.Sprintf("409, then GET: %d %v %s", st, err, got)
		case retryable(st, err):
			last = fmt.Sprintf("%d %v %s", st, err, data)
			proctest.Backoff(ctx, attempt, len(bases))
		default:
			return 0, fmt.Errorf("create %s via %s: %d %s", sid, base, st, data)
		}
	}
	return 0, fmt.Errorf("create %s: %w (last: %s)", sid, ctx.Err(), last)
}

// appendRetry appends es through bases (starting at first), retrying the
// same bytes across nodes until it is acknowledged or ctx ends.
func appendRetry(ctx context.Context, hc *http.Client, bases []string, first int, sid string, es ...proctest.Entry) (proctest.WriteResult, error) {
	body := proctest.AppendBody(es...)
	var last string
	for attempt := 0; ctx.Err() == nil; attempt++ {
		base := bases[(first+attempt)%len(bases)]
		st, _, data, err := proctest.Do(ctx, hc, http.MethodPost, base+"/v1/sessions/"+sid+"/entries", body)
		switch {
		case err == nil && st == http.StatusOK:
			var wr proctest.WriteResult
			if err := json.Unmarshal(data, &wr); err != nil {
				return wr, err
			}
			return wr, nil
		case retryable(st, err):
			last = fmt.Sprintf("%d %v %s", st, err, data)
			proctest.Backoff(ctx, attempt, len(bases))
		default:
			return proctest.WriteResult{}, fmt.Errorf("append to %s via %s: %d %s", sid, base, st, data)
		}
	}
	return proctest.WriteResult{}, fmt.Errorf("append to %s: %w (last: %s)", sid, ctx.Err(), last)
}
