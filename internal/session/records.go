package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pifleet/sessionlog/internal/tree"
)

// Build rebuilds a session from its records (header first). A multi-batch
// session not yet whole (Incomplete) is ErrNotFound: it does not exist for
// readers until its last batch is stored. A fork by reference needs its
// parent unless it holds its inherited lines: BuildFrom.
func Build(recs []Stored) (*tree.Session, []uint64, error) {
	return buildFrom(context.Background(), nil, recs, 0)
}

// RecordOf turns an entry into the record that carries it on the log.
func RecordOf(e *tree.Entry) Record {
	return Record{Type: e.Type(), ID: e.ID, Parent: e.ParentID, Data: e.Raw}
}

// HeaderRecord turns a header into its record.
func HeaderRecord(h *tree.Header) Record {
	return Record{Type: "session", Data: h.Raw}
}

// AbandonType is the record type of an abandonment marker: a node that
// finds a multi-batch session incomplete for too long (its writer died)
// appends one with a compare-and-swap on the session's last sequence, then
// purges the session. The CAS elects exactly one node and fences the
// writer, whose next batch expects the old last sequence.
const AbandonType = "_abandoned"

// AbandonRecord is the marker of an abandoned multi-batch session whose
// last record was at upTo, claimed by by: the claimer's own id, so that it
// recognizes its claim in the log when the append's reply was lost.
func AbandonRecord(upTo uint64, by string) Record {
	data := fmt.Appendf(nil, `{"type":%q,"upTo":%d}`, AbandonType, upTo)
	if by != "" {
		data = fmt.Appendf(nil, `{"type":%q,"upTo":%d,"by":%q}`, AbandonType, upTo, by)
	}
	return Record{Type: AbandonType, ID: AbandonType, Data: data}
}

// AbandonedBy is the claimer an abandonment marker names ("" if none).
func AbandonedBy(r Record) string {
	var m struct {
		By string `json:"by"`
	}
	if json.Unmarshal(r.Data, &m) != nil {
		return ""
	}
	return m.By
}

// IsAbandon reports whether r is an abandonment marker.
func (r Record) IsAbandon() bool { return r.Type == AbandonType }

// Incomplete reports whether recs (a session's records, header first) are
// a multi-batch session that is not all stored yet, or was abandoned: not
// a session for any reader yet.
func Incomplete(recs []Stored) bool {
	if len(recs) == 0 || !recs[0].IsHeader() || recs[0].Total == 0 {
		return false
	}
	for _, r := range recs {
		if r.IsAbandon() {
			return true
		}
	}
	return len(recs) < recs[0].Total
}
