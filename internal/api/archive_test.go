package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/archive"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// fakeArchive records what the operations asked for and answers with err,
// or with a canned result.
type fakeArchive struct {
	mu        sync.Mutex
	retention time.Duration
	err       error
	month     string
	from      uint64
	limit     int
	older     time.Duration
	dryRun    bool
}

func (f *fakeArchive) List(_ context.Context, month string, from uint64, limit int) ([]wire.ArchivedSession, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.month, f.from, f.limit = month, from, limit
	if f.err != nil {
		return nil, 0, f.err
	}
	c := wire.ArchivedSession{ArchiveCopy: wire.ArchiveCopy{Info: wire.Info{SessionID: sid1}, Month: "202611", Seq: from, Parts: 1, Bytes: 10}}
	return []wire.ArchivedSession{c}, from + 1, nil
}

func (f *fakeArchive) Restore(_ context.Context, sid string) (wire.ImportResult, error) {
	if f.err != nil {
		return wire.ImportResult{}, f.err
	}
	return wire.ImportResult{SessionID: sid, Entries: 3, LastSeq: 42}, nil
}

func (f *fakeArchive) RunPass(_ context.Context, older *time.Duration, dryRun bool) (wire.ArchivePass, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case older != nil:
		f.older = *older
	case f.retention == 0:
		return wire.ArchivePass{}, wire.Invalid("olderThan", "required")
	default:
		f.older = f.retention
	}
	f.dryRun = dryRun
	if f.err != nil {
		return wire.ArchivePass{}, f.err
	}
	if dryRun {
		return wire.ArchivePass{Candidates: 1, DryRun: true, Planned: []wire.RetentionAction{{SessionID: sid1, Tenant: "default", Action: "erase", Where: "log"}}}, nil
	}
	return wire.ArchivePass{Cutoff: time.Now().Add(-f.older), Candidates: 2, Archived: 2, Bytes: 100}, nil
}

func (f *fakeArchive) Erase(_ context.Context, sid string, expectLast uint64, by string) (wire.DeleteReply, error) {
	return wire.DeleteReply{}, fmt.Errorf("session %s: %w", sid, wire.ErrNotFound)
}

const sid1 = "01a22ba6-d94f-735d-ac17-131011d6d05b"

func TestArchiveOps(t *testing.T) {
	fa := &fakeArchive{retention: time.Hour}
	e := newEnv(t, func(c *api.Config) { c.Archive = fa })

	var page struct {
		Sessions []wire.ArchivedSession `json:"sessions"`
		Next     string                 `json:"next"`
	}
	e.ok(http.StatusOK, "GET", "/v1/archive?month=202611&cursor=7&limit=5", nil, &page)
	if fa.month != "202611" || fa.from != 7 || fa.limit != 5 || page.Next != "8" || len(page.Sessions) != 1 || page.Sessions[0].SessionID != sid1 {
		t.Errorf("list: asked %q %d %d, page %+v", fa.month, fa.from, fa.limit, page)
	}
	e.fails(http.StatusBadRequest, wire.CodeInvalid, "cursor", "GET", "/v1/archive?cursor=x", nil)
	e.fails(http.StatusBadRequest, wire.CodeInvalid, "limit", "GET", "/v1/archive?limit=5000", nil)

	var restored struct {
		SessionID  string `json:"sessionId"`
		EntryCount int    `json:"entryCount"`
		LastSeq    uint64 `json:"lastSeq"`
	}
	e.ok(http.StatusCreated, "POST", "/v1/archive/"+sid1+"/restore", nil, &restored)
	if restored.SessionID != sid1 || restored.EntryCount != 3 || restored.LastSeq != 42 {
		t.Errorf("restore: %+v", restored)
	}
	e.fails(http.StatusBadRequest, wire.CodeInvalid, "sessionId", "POST", "/v1/archive/nope/restore", nil)

	var pass wire.ArchivePass
	e.ok(http.StatusOK, "POST", "/v1/archive/run", "", &pass)
	if fa.older != time.Hour || pass.Archived != 2 {
		t.Errorf("run with the node's retention: older %v, %+v", fa.older, pass)
	}
	e.ok(http.StatusOK, "POST", "/v1/archive/run", `{"olderThan":"0s"}`, &pass)
	if fa.older != 0 {
		t.Errorf("run --older-than 0s: %v", fa.older)
	}
	e.fails(http.StatusBadRequest, wire.CodeInvalid, "olderThan", "POST", "/v1/archive/run", `{"olderThan":"soon"}`)
	e.ok(http.StatusOK, "POST", "/v1/archive/run", `{"dryRun":true}`, &pass)
	if !fa.dryRun || !pass.DryRun || len(pass.Planned) != 1 || pass.Planned[0].Action != "erase" {
		t.Errorf("dry run: %+v", pass)
	}

	fa.err = &archive.TooRecentError{Session: sid1, Until: time.Now()}
	if msg := e.fails(http.StatusConflict, wire.CodeConflict, "", "POST", "/v1/archive/"+sid1+"/restore", nil); msg != fa.err.Error() {
		t.Errorf("too recent: %q", msg)
	}
	fa.err = &archive.LeaseHeldError{Lease: session.Lease{Holder: "n2"}}
	e.fails(http.StatusConflict, wire.CodeConflict, "", "POST", "/v1/archive/run", "")
	fa.err = wire.Invalid("month", "bad")
	e.fails(http.StatusBadRequest, wire.CodeInvalid, "month", "GET", "/v1/archive?month=13", nil)
}

func TestArchiveOpsWithoutArchive(t *testing.T) {
	e := newEnv(t)
	e.fails(http.StatusNotFound, wire.CodeNotFound, "", "GET", "/v1/archive", nil)
	e.fails(http.StatusNotFound, wire.CodeNotFound, "", "POST", "/v1/archive/"+sid1+"/restore", nil)
	e.fails(http.StatusNotFound, wire.CodeNotFound, "", "POST", "/v1/archive/run", `{"olderThan":"1h"}`)

	fa := &fakeArchive{}
	e = newEnv(t, func(c *api.Config) { c.Archive = fa })
	e.fails(http.StatusBadRequest, wire.CodeInvalid, "olderThan", "POST", "/v1/archive/run", "")
}
