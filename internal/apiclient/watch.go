package apiclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
)

// Pauses between reconnects (watch) and between empty polls (entries).
const (
	retryMin = 100 * time.Millisecond
	retryMax = 2 * time.Second
)

// EntriesPageSize is how many entries one "entries" request of an
// EntryReader asks for at first.
const EntriesPageSize = 1000

// EntryReader pages through a session's entries. Over NATS a page of big
// entries can exceed the server's max_payload (pi-node then answers 413):
// the reader halves its page until the reply fits, down to one entry,
// rather than failing where HTTP would have succeeded.
type EntryReader struct {
	c     Client
	sid   string
	limit int
	// MinSeq is sent with every page: the node answers only once it has
	// applied this sequence (read your writes).
	MinSeq uint64
}

// NewEntryReader returns a reader of session sid's entries.
func NewEntryReader(c Client, sid string) *EntryReader {
	return &EntryReader{c: c, sid: sid, limit: EntriesPageSize}
}

// Next returns the entries with seq > after (at most one page), whether
// the page was full (more may follow at once), and the session's last
// sequence.
func (r *EntryReader) Next(ctx context.Context, after uint64) (page []SeqEntry, full bool, lastSeq uint64, err error) {
	for {
		var resp wire.EntriesReply
		err := Call(ctx, r.c, wire.EntriesRequest{SessionID: r.sid, AfterSeq: after, Limit: r.limit, MinSeq: r.MinSeq}, &resp)
		if IsStatus(err, http.StatusRequestEntityTooLarge) && r.limit > 1 {
			r.limit /= 2
			continue
		}
		return resp.Entries, len(resp.Entries) == r.limit, resp.LastSeq, err
	}
}

// PollEntries follows a session over a Client that cannot push (see
// Follower): it asks for the entries after the last one seen, again at once
// while pages come back full, else after a pause that grows from 100 ms to
// 2 s while nothing is new. A temporary failure (node restarting) is
// reported through retry and waited out; anything else ends the follow.
func PollEntries(ctx context.Context, c Client, sid string, after uint64, fn func(SeqEntry) error, retry func(error)) error {
	r := NewEntryReader(c, sid)
	pause := retryMin
	for {
		page, full, _, err := r.Next(ctx, after)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !Temporary(err):
			return err
		case err != nil:
			retry(err)
		}
		for _, e := range page {
			if err := fn(e); err != nil {
				return err
			}
			after = e.Seq
		}
		if len(page) > 0 {
			pause = retryMin
			if full {
				continue
			}
		}
		if !pauseFor(ctx, pause) {
			return nil
		}
		pause = min(2*pause, retryMax)
	}
}

// pauseFor waits d, or less when ctx ends first (then false).
func pauseFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Follow reads the session's Server-Sent Events watch; see Follower. When
// the stream drops (node restart, proxy timeout) it reconnects with
// Last-Event-ID set to the last entry seen, which pi-node resumes after
// without gaps or duplicates.
func (b *HTTP) Follow(ctx context.Context, sid string, after uint64, fn func(SeqEntry) error, retry func(error)) error {
	pause := retryMin
	for {
		seen := after
		err := b.watch(ctx, sid, &after, fn)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !Temporary(err):
			return err
		case err != nil:
			retry(err)
		}
		if after != seen {
			pause = retryMin
		}
		if !pauseFor(ctx, pause) {
			return nil
		}
		pause = min(2*pause, retryMax)
	}
}

// watch runs one connection of the stream, advancing *after with each
// entry. nil means the server ended the stream.
func (b *HTTP) watch(ctx context.Context, sid string, after *uint64, fn func(SeqEntry) error) error {
	// Not through Do: the reply is a stream.
	req, err := b.request(ctx, wire.WatchRequest{SessionID: sid})
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if *after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(*after, 10))
	}
	resp, err := b.stream.Do(req)
	if err != nil {
		return b.unreachable(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		return b.statusError(wire.OpWatch.Name, resp.StatusCode, body)
	}
	// pi-node pings every 15 s. A peer that vanished without closing the
	// connection (a crashed host, a dropped NAT entry) sends nothing at
	// all: after the silence limit the stream counts as dead, and is
	// reopened.
	var silent atomic.Bool
	idle := time.AfterFunc(b.silence, func() {
		silent.Store(true)
		resp.Body.Close()
	})
	defer idle.Stop()
	body := &activityReader{r: resp.Body, idle: idle, after: b.silence}
	err = readEvents(body, func(id string, data []byte) error {
		seq, err := strconv.ParseUint(id, 10, 64)
		if err != nil || seq <= *after {
			return nil // not an entry event, or one already seen
		}
		if err := fn(SeqEntry{Seq: seq, Entry: bytes.Clone(data)}); err != nil {
			return err
		}
		*after = seq
		return nil
	})
	var sink *sinkError
	switch {
	case errors.As(err, &sink):
		return sink.err
	case err != nil && silent.Load():
		return &UnreachableError{Where: b.base, Err: fmt.Errorf("the watch stream said nothing for %v", b.silence)}
	case err != nil:
		return b.unreachable(ctx, err)
	}
	return nil
}

// activityReader postpones the idle timer with every read that returns
// data.
type activityReader struct {
	r     io.Reader
	idle  *time.Timer
	after time.Duration
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.idle.Reset(a.after)
	}
	return n, err
}

// sinkError marks an error of the event handler (a failed write), which
// must end the follow, apart from read errors of the stream, which only
// end one connection.
type sinkError struct{ err error }

func (e *sinkError) Error() string { return e.err.Error() }

// readEvents parses a text/event-stream (the WHATWG format): "field: value"
// lines, a blank line ending each event, ":" lines being comments (pi-node's
// pings). Only events of type "entry" reach fn, with their id and their data
// lines joined by LF. It returns nil at the end of the stream.
func readEvents(r io.Reader, fn func(id string, data []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var id, event string
	var data []byte
	hasData := false
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF && len(line) == 0 {
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			if hasData && event == "entry" {
				if err := fn(id, data); err != nil {
					return &sinkError{err}
				}
			}
			event, data, hasData = "", data[:0], false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			id = string(value)
		case "event":
			event = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data, hasData = append(data, value...), true
		}
	}
}
