package main

import (
	"context"
	"sync"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// previewEntries is how many entries from a session's start are looked at
// for its first user message: pi's first user message comes after at most
// a model and a thinking-level change, so this is ample and keeps the
// request small whatever the session's size.
const previewEntries = 20

// firstMessages returns pi's /resume preview of each session: the first
// user message with text, as "pi-ctl tree" previews it, or "(no
// messages)". The catalog has it (list's preview) for every session in the
// node's memory; the rest (evicted since a restart, or a node without the
// field) are read from the head of each session, a few at once.
func firstMessages(ctx context.Context, b backend, infos []wire.Info) ([]string, error) {
	out := make([]string, len(infos))
	errs := make([]error, len(infos))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(8, len(infos)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				out[k], errs[k] = firstMessage(ctx, b, infos[k].SessionID)
			}
		}()
	}
	for k, in := range infos {
		if in.FirstMessage != nil {
			out[k] = *in.FirstMessage
			continue
		}
		next <- k
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// firstMessage reads a session's entries from the start, two at a time
// (the first user message is mostly the first or second entry, and a
// later one may be a megabyte of tool output not worth fetching).
func firstMessage(ctx context.Context, b backend, sid string) (string, error) {
	var after uint64
	for seen := 0; seen < previewEntries; {
		var r wire.EntriesReply
		if err := call(ctx, b, wire.EntriesRequest{SessionID: sid, AfterSeq: after, Limit: 2}, &r); err != nil {
			return "", err
		}
		for _, se := range r.Entries {
			e, err := tree.ParseEntry(se.Entry)
			if err != nil {
				continue
			}
			if p, ok := e.UserPreview(); ok {
				return p, nil
			}
		}
		if len(r.Entries) == 0 || r.Entries[len(r.Entries)-1].Seq >= r.LastSeq {
			break
		}
		seen += len(r.Entries)
		after = r.Entries[len(r.Entries)-1].Seq
	}
	return "(no messages)", nil
}
