package client

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/nodetest"
)

// TestSearch: over each API transport, a query finds the entry on the
// branch the session left (OnPath false) and the one on its path, marks
// the matched words, leaves the branch out with SearchPathOnly, pages
// with SearchLimit(1) through every hit once, and names the query in the
// error of a bad one. The JetStream transport has no index to ask.
func TestSearch(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	for _, kind := range []string{"HTTP", "NodeNATS"} {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			c := dial(t, n, kind)
			cwd := "/search/" + kind
			s, err := c.Create(WithCwd(cwd))
			if err != nil {
				t.Fatal(err)
			}
			q := must(t)(s.AppendMessage(ctx, user("Why does the salt check fail?")))
			gone := must(t)(s.AppendMessage(ctx, assistant("The salt is not Base64.")))
			if err := s.Branch(ctx, q.ID); err != nil {
				t.Fatal(err)
			}
			must(t)(s.AppendMessage(ctx, assistant("Let me read auth.ts first.")))
			last := must(t)(s.AppendMessage(ctx, user("And the fix?")))

			query := "salt cwd:" + cwd
			r, err := c.Search(ctx, query, SearchMinSeq(last.Seq))
			if err != nil {
				t.Fatal(err)
			}
			onPath := map[string]bool{}
			for _, h := range r.Hits {
				onPath[h.EntryID] = h.OnPath
				if h.SessionID != s.ID() || h.Cwd != cwd || h.Type != "message" || h.Score <= 0 {
					t.Errorf("hit %+v", h)
				}
				if !slices.ContainsFunc(h.Snippet, func(p SnippetPart) bool { return p.Match && strings.EqualFold(p.Text, "salt") }) {
					t.Errorf("hit %s: no part of its snippet marks \"salt\": %+v", h.EntryID, h.Snippet)
				}
			}
			if len(r.Hits) != 2 || !onPath[q.ID] || onPath[gone.ID] || r.Next != "" || r.Total < len(r.Hits) {
				t.Fatalf("search %q: %+v; want %s on the path and %s off it", query, r, q.ID, gone.ID)
			}

			r, err = c.Search(ctx, query, SearchPathOnly())
			if err != nil || len(r.Hits) != 1 || r.Hits[0].EntryID != q.ID {
				t.Errorf("search %q on the path: %+v, %v", query, r, err)
			}

			var paged []string
			for h, err := range c.SearchAll(ctx, query, SearchLimit(1)) {
				if err != nil {
					t.Fatal(err)
				}
				paged = append(paged, h.EntryID)
			}
			slices.Sort(paged)
			if want := slices.Sorted(maps.Keys(onPath)); !slices.Equal(paged, want) {
				t.Errorf("pages of one hit: %v, want each of %v once", paged, want)
			}

			_, err = c.Search(ctx, `salt "unclosed`)
			var fe *FieldError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Field != "q" || !strings.Contains(err.Error(), "position") {
				t.Errorf("a bad query: %v; want ErrInvalid naming q and the position", err)
			}
		})
	}
	c := dial(t, n, "JetStream")
	if _, err := c.Search(ctxT(t), "salt"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("search over JetStream: %v, want errors.ErrUnsupported", err)
	}
}
