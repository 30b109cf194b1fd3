package proctest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

// Entry is a pi message entry with every field chosen by the client, so a
// retry sends the same bytes.
type Entry struct {
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

// NewEntry builds a user message entry; parent "" makes a root.
func NewEntry(id, parent, text string, at time.Time) Entry {
	e := Entry{Type: "message", ID: id, Timestamp: Stamp(at)}
	if parent != "" {
		e.ParentID = &parent
	}
	e.Message.Role, e.Message.Content, e.Message.Timestamp = "user", text, at.UnixMilli()
	return e
}

// Stamp formats t as pi's timestamps (JavaScript's toISOString).
func Stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// AppendBody is the JSON body of an append of es.
func AppendBody(es ...Entry) []byte {
	b, _ := json.Marshal(map[string]any{"entries": es})
	return b
}

// WriteResult is the reply of create and append.
type WriteResult struct {
	LastSeq uint64 `json:"lastSeq"`
	Entries []struct {
		ID  string `json:"id"`
		Seq uint64 `json:"seq"`
	} `json:"entries"`
}

// Backoff pauses after every full round of failed attempts across the
// nodes, growing to a quarter second: failing over to another node is
// immediate, hammering a cluster without quorum is not useful, and a
// longer pause would be counted against pi-node in the write gap.
func Backoff(ctx context.Context, attempt, nodes int) {
	if (attempt+1)%nodes != 0 {
		return
	}
	d := min(50*time.Millisecond<<min((attempt+1)/nodes-1, 3), 250*time.Millisecond)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// ErrorKind names a failed attempt for a report: the HTTP status, or the
// kind of transport error.
func ErrorKind(status int, err error) string {
	var nerr net.Error
	switch {
	case err == nil:
		return fmt.Sprintf("http %d", status)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.As(err, &nerr) && nerr.Timeout(), errors.Is(err, os.ErrDeadlineExceeded):
		return "client timeout"
	case strings.Contains(err.Error(), "EOF"):
		return "connection closed (EOF)"
	}
	return "transport: " + err.Error()
}
