package pisync

import (
	"context"
	"net/http"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/wire"
)

// exportOf is a session as pi JSONL, the lines as stored. When the export
// is too large for the transport (NATS's max_payload), it is put together
// from the header (get) and the entries, a page at a time.
func exportOf(ctx context.Context, c apiclient.Client, sid string) ([]byte, error) {
	body, err := c.Do(ctx, wire.ExportRequest{SessionID: sid, Consistency: wire.ConsistencyStrong})
	if !apiclient.IsStatus(err, http.StatusRequestEntityTooLarge) {
		return body, err
	}
	var d wire.Detail
	if err := apiclient.Call(ctx, c, wire.GetRequest{SessionID: sid, Consistency: wire.ConsistencyStrong}, &d); err != nil {
		return nil, err
	}
	out := append(append([]byte{}, d.Header...), '\n')
	r := apiclient.NewEntryReader(c, sid)
	r.MinSeq = d.LastSeq // every page from a node that has what get saw
	var after uint64
	for {
		page, full, _, err := r.Next(ctx, after)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			out = append(append(out, e.Entry...), '\n')
			after = e.Seq
		}
		if !full || len(page) == 0 {
			return out, nil
		}
	}
}
