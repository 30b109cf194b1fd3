package session

import (
	"fmt"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Build rebuilds a session from its records (header first).
func Build(recs []Stored) (*tree.Session, []uint64, error) {
	if len(recs) == 0 || !recs[0].IsHeader() {
		return nil, nil, fmt.Errorf("%w: the log holds no header for this session", wire.ErrInvalid)
	}
	h, err := tree.ParseHeader(recs[0].Data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: header at seq %d: %v", wire.ErrInvalid, recs[0].Seq, err)
	}
	s := tree.NewSession(h)
	s.Grow(len(recs) - 1)
	seqs := make([]uint64, 0, len(recs)-1)
	for _, r := range recs[1:] {
		if r.IsHeader() {
			continue // a repeated header is ignored, as pi does
		}
		e, err := tree.ParseEntry(r.Data)
		if err != nil {
			continue // not an entry pi could read; the Store counts these
		}
		s.Append(e)
		seqs = append(seqs, r.Seq)
	}
	return s, seqs, nil
}

// RecordOf turns an entry into the record that carries it on the log.
func RecordOf(e *tree.Entry) Record {
	return Record{Type: e.Type(), ID: e.ID, Parent: e.ParentID, Data: e.Raw}
}

// HeaderRecord turns a header into its record.
func HeaderRecord(h *tree.Header) Record {
	return Record{Type: "session", Data: h.Raw}
}
