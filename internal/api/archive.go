package api

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Archive is what the archive operations serve: *archive.Archiver. A
// Server without one answers them with 404.
type Archive interface {
	List(ctx context.Context, month string, from uint64, limit int) ([]wire.ArchivedSession, uint64, error)
	Restore(ctx context.Context, sid string) (wire.ImportResult, error)
	// RunPass runs a pass now: sessions idle for olderThan archived, or
	// with 0 the node's retention policies applied; dryRun only plans it.
	RunPass(ctx context.Context, olderThan *time.Duration, dryRun bool) (wire.ArchivePass, error)
	// Erase erases a session wherever it lives (archive.Archiver.Erase);
	// by names who asked, for the ledger and the audit line.
	Erase(ctx context.Context, sid string, expectLast uint64, by string) (wire.DeleteReply, error)
}

// errNoArchive answers the archive operations of a node without one (it
// names no input: notFoundField leaves it alone).
var errNoArchive = fmt.Errorf("%w: this node serves no archive", wire.ErrNotFound)

func (s *Server) archive() (Archive, error) {
	if s.cfg.Archive == nil {
		return nil, errNoArchive
	}
	return s.cfg.Archive, nil
}

func (s *Server) archiveList(ctx context.Context, r *wire.ArchiveListRequest) (reply, error) {
	a, err := s.archive()
	if err != nil {
		return reply{}, err
	}
	if err := pageLimit(r.Limit); err != nil {
		return reply{}, err
	}
	var from uint64
	if r.Cursor != "" {
		if from, err = strconv.ParseUint(r.Cursor, 10, 64); err != nil {
			return reply{}, wire.Invalid("cursor", fmt.Sprintf("%q is not a cursor of the archive (the next of a previous page)", r.Cursor))
		}
	}
	list, next, err := a.List(ctx, r.Month, from, r.Limit)
	if err != nil {
		return reply{}, err
	}
	out := wire.ArchiveListReply{Sessions: list}
	if next != 0 {
		out.Next = strconv.FormatUint(next, 10)
	}
	return jsonReply(out)
}

func (s *Server) archiveRestore(ctx context.Context, r *wire.ArchiveRestoreRequest) (reply, error) {
	if err := session.ValidSessionID(r.SessionID); err != nil {
		return reply{}, err
	}
	a, err := s.archive()
	if err != nil {
		return reply{}, err
	}
	res, err := a.Restore(ctx, r.SessionID)
	if err != nil {
		return reply{}, err
	}
	return jsonReply(wire.RestoreReply{SessionID: res.SessionID, EntryCount: res.Entries, LastSeq: res.LastSeq})
}

func (s *Server) archiveRun(ctx context.Context, r *wire.ArchiveRunRequest) (reply, error) {
	a, err := s.archive()
	if err != nil {
		return reply{}, err
	}
	var older *time.Duration
	if r.OlderThan != "" {
		d, err := time.ParseDuration(r.OlderThan)
		if err != nil || d < 0 {
			return reply{}, wire.Invalid("olderThan", fmt.Sprintf("%q is not a duration like 720h", r.OlderThan))
		}
		older = &d
	}
	res, err := a.RunPass(ctx, older, r.DryRun)
	if err != nil && res.Archived == 0 && res.Erased == 0 {
		return reply{}, err
	}
	if res.Archived > 0 || res.Erased > 0 {
		// Read your writes: the purge notices are in the log, and this
		// node's next read of an archived session must find it gone.
		wctx, cancel := context.WithTimeout(ctx, s.cfg.MinSeqTimeout)
		cerr := store.CatchUp(wctx, s.svc.Store)
		cancel()
		if cerr != nil {
			return reply{}, fmt.Errorf("archived %d and erased %d sessions, but this node has not applied the purges within %v: %w", res.Archived, res.Erased, s.cfg.MinSeqTimeout, cerr)
		}
	}
	// Sessions that failed are counted in the result and retried by the
	// next pass; the pass as a whole did its work.
	return jsonReply(res)
}

// errNoErase answers a delete on a server configured without an archive
// (pi-node always has one; cross-region mode's serves delete alone).
var errNoErase = fmt.Errorf("%w: this server cannot erase sessions (it has no archive)", wire.ErrInvalid)

func (s *Server) deleteSession(ctx context.Context, r *wire.DeleteRequest) (reply, error) {
	if err := session.ValidSessionID(r.SessionID); err != nil {
		return reply{}, err
	}
	if s.cfg.Archive == nil {
		return reply{}, errNoErase
	}
	p := principalOf(ctx)
	res, err := s.cfg.Archive.Erase(ctx, r.SessionID, r.ExpectLastSeq, p.name)
	if err != nil {
		return reply{}, err
	}
	if res.Records > 0 {
		// Read your writes: the notice is in the log, and this node's
		// next read of the session must find it gone.
		wctx, cancel := context.WithTimeout(ctx, s.cfg.MinSeqTimeout)
		cerr := s.svc.Store.For(r.SessionID).CatchUp(wctx)
		cancel()
		if cerr != nil {
			return reply{}, fmt.Errorf("erased session %s, but this node has not applied the erasure within %v: %w", r.SessionID, s.cfg.MinSeqTimeout, cerr)
		}
	}
	return jsonReply(res)
}
