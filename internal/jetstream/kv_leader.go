package jetstream

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/wire"
)

// leaderEntries returns the live values of bucket's keys that match
// filter (a key, or one with wildcards), key → value, read from the
// stream leader one get at a time. A KV listing runs on a consumer, which
// nats-server may place on a replica whose store is still catching up —
// after a restore, while that replica already reports itself current —
// and the listing then comes back short. Leader gets cannot.
func leaderEntries(ctx context.Context, js jetstream.JetStream, api, bucket, filter string) (map[string][]byte, error) {
	prefix := "$KV." + bucket + "."
	out := map[string][]byte{}
	for seq := uint64(1); ; {
		m, err := leaderGet(ctx, js, api, bucketStream(bucket), msgGetRequest{Seq: seq, NextFor: prefix + filter})
		if isNotFound(err) {
			return out, nil
		}
		if err != nil {
			return nil, translate(err, wire.ErrConflict)
		}
		key := strings.TrimPrefix(m.Subject, prefix)
		if m.Header.Get(kvOperationHeader) != "" || m.Header.Get(jetstream.MarkerReasonHeader) != "" {
			delete(out, key)
		} else {
			out[key] = m.Data
		}
		seq = m.Seq + 1
	}
}
