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

	"github.com/google/uuid"
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
				Name    string  `json:"name"`
				Current bool    `json:"current"`
				Offline bool    `json:"offline"`
				Lag     *uint64 `json:"lag"` // a pointer to tell "0" from "absent"
			} `json:"followers"`
		} `json:"stream"`
	} `json:"jetstream"`
}

// status fetches a node's /v1/status.
func status(base string) (nodeStatus, error) {
	var s nodeStatus
	st, _, body, err := proctest.Do(context.Background(), proctest.ProbeClient, http.MethodGet, base+"/v1/status", nil)
	if err != nil {
		return s, err
	}
	if st != http.StatusOK {
		return s, fmt.Errorf("status %d: %s", st, body)
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return s, fmt.Errorf("status: %w: %s", err, body)
	}
	if s.JetStream.Error != "" {
		return s, fmt.Errorf("status: jetstream: %s", s.JetStream.Error)
	}
	return s, nil
}

// writeResult is the reply of create and append.
type writeResult struct {
	SessionID string `json:"sessionId"`
	LastSeq   uint64 `json:"lastSeq"`
	Entries   []struct {
		ID  string `json:"id"`
		Seq uint64 `json:"seq"`
	} `json:"entries"`
}

// entry is a pi message entry with every field chosen by the client, so a
// retry sends the same bytes.
type entry struct {
	Type      string  `json:"type"`
	ID        string  `json:"id"`
	ParentID  *string `json:"parentId"`
	Timestamp string  `json:"timestamp"`
	Message   struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		Timestamp int64  `json:"timestamp"`
	} `json:"message"`
}

// newEntry builds a user message entry; parent "" makes a root.
func newEntry(id, parent, text string, at time.Time) entry {
	e := entry{Type: "message", ID: id, Timestamp: stamp(at)}
	if parent != "" {
		e.ParentID = &parent
	}
	e.Message.Role, e.Message.Content, e.Message.Timestamp = "user", text, at.UnixMilli()
	return e
}

// stamp formats t as pi's timestamps (JavaScript's toISOString).
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// appendBody is the JSON body of an append of es.
func appendBody(es ...entry) []byte {
	b, _ := json.Marshal(map[string]any{"entries": es})
	return b
}

// createBody is the JSON body creating session sid with no entries; the
// header is chosen by the client, so a retried create is recognizable.
func createBody(sid, cwd string, at time.Time) []byte {
	b, _ := json.Marshal(map[string]any{"header": map[string]any{
		"type": "session", "version": 3, "id": sid, "cwd": cwd,
		"timestamp": stamp(at),
	}, "entries": []any{}})
	return b
}

// newSessionID returns a UUIDv7, as pi-node would assign.
func newSessionID(t *testing.T) string {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
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
			var wr writeResult
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
				info.Header.ID == sid && info.Header.Cwd == cwd && info.Header.Timestamp == stamp(at) {
				return info.LastSeq, nil
			}
			last = fmt.Sprintf("409, then GET: %d %v %s", st, err, got)
		case retryable(st, err):
			last = fmt.Sprintf("%d %v %s", st, err, data)
			backoff(ctx, attempt, len(bases))
		default:
			return 0, fmt.Errorf("create %s via %s: %d %s", sid, base, st, data)
		}
	}
	return 0, fmt.Errorf("create %s: %w (last: %s)", sid, ctx.Err(), last)
}

// backoff pauses after every full round of failed attempts across the
// nodes, growing to a quarter second: failing over to another node is
// immediate, hammering a cluster without quorum is not useful, and a
// longer pause would be counted against pi-node in the write gap.
func backoff(ctx context.Context, attempt, nodes int) {
	if (attempt+1)%nodes != 0 {
		return
	}
	d := min(50*time.Millisecond<<min((attempt+1)/nodes-1, 3), 250*time.Millisecond)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// appendRetry appends es through bases (starting at first), retrying the
// same bytes across nodes until it is acknowledged or ctx ends.
func appendRetry(ctx context.Context, hc *http.Client, bases []string, first int, sid string, es ...entry) (writeResult, error) {
	body := appendBody(es...)
	var last string
	for attempt := 0; ctx.Err() == nil; attempt++ {
		base := bases[(first+attempt)%len(bases)]
		st, _, data, err := proctest.Do(ctx, hc, http.MethodPost, base+"/v1/sessions/"+sid+"/entries", body)
		switch {
		case err == nil && st == http.StatusOK:
			var wr writeResult
			if err := json.Unmarshal(data, &wr); err != nil {
				return wr, err
			}
			return wr, nil
		case retryable(st, err):
			last = fmt.Sprintf("%d %v %s", st, err, data)
			backoff(ctx, attempt, len(bases))
		default:
			return writeResult{}, fmt.Errorf("append to %s via %s: %d %s", sid, base, st, data)
		}
	}
	return writeResult{}, fmt.Errorf("append to %s: %w (last: %s)", sid, ctx.Err(), last)
}
