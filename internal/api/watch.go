package api

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// watchPage is how many entries one read of a watch sends; a long backlog
// goes out in pages so the Store's lock is never held for long.
const watchPage = 1000

// handleWatch streams a session's entries as Server-Sent Events: one
// "entry" event per entry with the stream sequence as its id, so that a
// client (EventSource reconnects by itself) resumes after the last event it
// saw with Last-Event-ID. ?afterSeq= starts elsewhere; the header wins, as a
// browser's reconnect repeats the original URL.
func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	status := s.watch(w, r)
	s.metrics.observeRequest(transportHTTP, "watch", status, time.Since(start))
}

func (s *Server) watch(w http.ResponseWriter, r *http.Request) int {
	op := wire.OpWatch.Name
	s.setNode(w.Header())
	p, err := s.checkHTTP(r, op)
	if err != nil {
		return s.writeError(w, op, err)
	}
	// After the token check: a client without one holds no slot.
	if err := s.watchLim.acquire(); err != nil {
		return s.writeError(w, op, err)
	}
	defer s.watchLim.release()
	req, err := decode[wire.WatchRequest](nil, r.PathValue, r.URL.Query())
	if err != nil {
		return s.writeError(w, op, err)
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return s.writeError(w, op, wire.Invalid("Last-Event-ID", "must be the id of an event: a stream sequence"))
		}
		req.AfterSeq = n
	}
	if err := session.ValidSessionID(req.SessionID); err != nil {
		return s.writeError(w, op, err)
	}
	// The first page is read before any byte is sent, so that an unknown
	// session (or a minSeq timeout) is still a proper JSON error.
	if _, err := s.await(r.Context(), wire.OpWatch, paramsOf(req)); err != nil {
		return s.writeError(w, op, err)
	}
	if err := s.confine(withPrincipal(r.Context(), p), wire.OpWatch, req); err != nil {
		return s.writeError(w, op, notFoundField(wire.OpWatch, err))
	}
	changed := s.svc.Store.For(req.SessionID).Changed()
	first, f, err := s.svc.Entries(r.Context(), req.SessionID, req.AfterSeq, watchPage)
	if err != nil {
		return s.writeError(w, op, notFoundField(wire.OpWatch, err))
	}

	rc := http.NewResponseController(w)
	h := w.Header()
	// The freshness of the first page, as every read's (later events
	// carry their own seq as id).
	for k, v := range s.readHeaders(f) {
		h[k] = v
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.watches, cancel)
	defer stop()
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	after, page := req.AfterSeq, first.Entries
	buf := []byte(": watching\n\n") // so the headers go out even with no entries yet
	for {
		for _, e := range page {
			buf = appendEvent(buf, e)
			after = e.Seq
		}
		if len(buf) > 0 && !s.send(rc, w, buf) {
			return http.StatusOK
		}
		buf = buf[:0]
		if len(page) < watchPage {
			if !s.wait(ctx, rc, w, beat, changed) {
				return http.StatusOK
			}
		}
		changed = s.svc.Store.For(req.SessionID).Changed()
		next, _, err := s.svc.Entries(ctx, req.SessionID, after, watchPage)
		if err != nil {
			// Purged, or the client left: the stream just ends.
			if !errors.Is(err, context.Canceled) {
				s.log.Debug("watch ended", keySession, req.SessionID, keyErr, err)
			}
			return http.StatusOK
		}
		page = next.Entries
	}
}

// wait blocks until the Store applies something, sending heartbeats
// meanwhile; false when the stream should end.
func (s *Server) wait(ctx context.Context, rc *http.ResponseController, w http.ResponseWriter, beat *time.Ticker, changed <-chan struct{}) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-changed:
			return true
		case <-beat.C:
			if !s.send(rc, w, []byte(": ping\n\n")) {
				return false
			}
		}
	}
}

// send writes and flushes b, with a write deadline fitted to the stream
// rather than the server's WriteTimeout (which a stream would outlive).
func (s *Server) send(rc *http.ResponseController, w http.ResponseWriter, b []byte) bool {
	_ = rc.SetWriteDeadline(time.Now().Add(2*s.cfg.Heartbeat + 10*time.Second))
	if _, err := w.Write(b); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// appendEvent formats one entry event. An entry is one JSONL line, but JSON
// may carry CR as whitespace between tokens; SSE would read it as a line
// break, so every line of the data gets its own "data:" field (the client
// joins them with LF, which JSON treats the same).
func appendEvent(b []byte, e wire.SeqEntry) []byte {
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, "\nevent: entry\n"...)
	data := e.Entry
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			break
		}
		b = append(append(append(b, "data: "...), data[:i]...), '\n')
		data = data[i+1:]
	}
	b = append(append(append(b, "data: "...), data...), "\n\n"...)
	return b
}
