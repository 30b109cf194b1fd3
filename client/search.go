package client

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/wire"
)

// SearchResult is one page of Search: Hits best first, Total an estimate
// of the hits of the whole query, Next the cursor of the next page (""
// on the last one: SearchCursor takes it).
type SearchResult = wire.SearchReply

// SearchHit is an entry that matches a query: its session (SessionID, the
// session's current Name — nil when it has none — and Cwd), the entry
// (EntryID, Type, a message's Role, Timestamp), OnPath (false when the
// entry is on a branch the session left: not on the path from the root to
// its last entry), Score (higher is better) and Snippet, the text around
// the match.
type SearchHit = wire.SearchHit

// SnippetPart is a piece of a hit's snippet: the snippet is the parts'
// texts joined, and Match marks the words the query matched.
type SnippetPart = wire.SnippetPart

// SearchOption configures Search and SearchAll.
type SearchOption func(*wire.SearchRequest)

// SearchPathOnly searches only the entries on each session's default path
// (root to its last entry), leaving out abandoned branches. By default
// every entry is searched, and SearchHit.OnPath tells them apart.
func SearchPathOnly() SearchOption {
	return func(r *wire.SearchRequest) { r.Branch = wire.SearchBranchPath }
}

// SearchLimit sets the hits per page (default 20); pi-node serves at most
// 100, and more is taken as 100.
func SearchLimit(n int) SearchOption { return func(r *wire.SearchRequest) { r.Limit = n } }

// SearchCursor asks for the page after the one whose SearchResult.Next
// this is; the query and the other options must be the same.
func SearchCursor(next string) SearchOption {
	return func(r *wire.SearchRequest) { r.Cursor = next }
}

// SearchMinSeq makes the node search at least up to log sequence seq (a
// Written.Seq, of any session): it waits until it has indexed that far.
func SearchMinSeq(seq uint64) SearchOption { return func(r *wire.SearchRequest) { r.MinSeq = seq } }

// SearchLatest makes the search linearizable: it reflects every write
// acknowledged before it began, by any worker through any pi-node (the
// node asks the stream leader first; see WithLatest).
func SearchLatest() SearchOption {
	return func(r *wire.SearchRequest) { r.Consistency = wire.ConsistencyStrong }
}

// Search runs a full-text query over every session the client may read
// and returns one page of hits, best first (docs/API.md, Search). query
// is the search language: words (all must match), "a phrase", prefix*,
// -excluded, and filters field:value (role, type, tool, model, label,
// cwd, name, session, since, until).
//
// A query that does not parse is ErrInvalid with a *FieldError naming
// "q", whose message gives the position and what was expected. The index
// is pi-node's: over the JetStream transport Search is
// errors.ErrUnsupported; use HTTP or NodeNATS.
func (c *Client) Search(ctx context.Context, query string, opts ...SearchOption) (SearchResult, error) {
	if c.api == nil {
		return SearchResult{}, fmt.Errorf("search: %w: the index is pi-node's, which the JetStream transport does not reach (use HTTP or NodeNATS)", errors.ErrUnsupported)
	}
	req := wire.SearchRequest{Query: query}
	for _, o := range opts {
		o(&req)
	}
	var r SearchResult
	if err := apiclient.Call(ctx, c.api, req, &r); err != nil {
		return SearchResult{}, fmt.Errorf("search: %w", err)
	}
	return r, nil
}

// SearchAll runs query as Search does and yields every hit, page after
// page (SearchLimit sets the page size), until the last page or the first
// error, which it yields with a zero SearchHit and stops.
func (c *Client) SearchAll(ctx context.Context, query string, opts ...SearchOption) iter.Seq2[SearchHit, error] {
	return func(yield func(SearchHit, error) bool) {
		page := opts
		for {
			r, err := c.Search(ctx, query, page...)
			if err != nil {
				yield(SearchHit{}, err)
				return
			}
			for _, h := range r.Hits {
				if !yield(h, nil) {
					return
				}
			}
			if r.Next == "" {
				return
			}
			page = append(opts[:len(opts):len(opts)], SearchCursor(r.Next))
		}
	}
}
