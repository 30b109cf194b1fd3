package session

import "encoding/json"

// PurgeToken is the session token of purge notices. A purge removes a
// session's records from the log, but a Store that already applied them
// would never learn of it; so Log.Purge appends a notice, a record whose
// Session is PurgeToken (subject <prefix>._purge: UUIDs never collide with
// it) and whose Data is PurgeNotice, that every Store applies in order.
const PurgeToken = "_purge"

// PurgeNotice is the body of a purge notice.
type PurgeNotice struct {
	Session string `json:"session"`
	// UpTo is the log's last sequence when the purge ran: records of the
	// session at or below it are gone. A session created again later (its
	// header beyond UpTo) is a new session and is kept.
	UpTo uint64 `json:"upTo"`
	// Erase marks the notice of an erasure (Eraser.Erase): beyond dropping
	// the session, a Store rewrites its snapshot and an index merges its
	// segments soon, so that no file of theirs keeps the session's bytes.
	Erase bool `json:"erase,omitempty"`
}

// PurgeRecord builds the notice record for a purge of session at upTo.
func PurgeRecord(session string, upTo uint64) Record {
	b, _ := json.Marshal(PurgeNotice{Session: session, UpTo: upTo})
	return Record{Type: "purge", ID: session, Data: b}
}

// EraseRecord builds the notice record of an erasure of session at upTo.
func EraseRecord(session string, upTo uint64) Record {
	b, _ := json.Marshal(PurgeNotice{Session: session, UpTo: upTo, Erase: true})
	return Record{Type: "purge", ID: session, Data: b}
}

// ParseNotice decodes the body of a purge or erasure notice; ok is false
// for one without a session.
func ParseNotice(data []byte) (n PurgeNotice, ok bool) {
	if json.Unmarshal(data, &n) != nil || n.Session == "" {
		return PurgeNotice{}, false
	}
	return n, true
}
