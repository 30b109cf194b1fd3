package wire

import "time"

// ArchiveCopy describes one archived copy of a session: its catalog record
// as of the archived last sequence, and where the copy sits in the archive.
type ArchiveCopy struct {
	Info
	// Month (YYYYMM) partitions the archive: the creation month of a UUIDv7
	// session id, else of the session header's timestamp.
	Month string `json:"month"`
	// Seq is the archive's sequence of the copy's first message; a copy of
	// more than one part is a run of consecutive messages.
	Seq        uint64    `json:"archiveSeq"`
	Parts      int       `json:"parts"`
	Bytes      int64     `json:"bytes"` // size of the pi JSONL file
	ArchivedAt time.Time `json:"archivedAt"`
}

// ArchivedSession is a copy in an archive listing. Live flags a session
// the answering node's Store holds: a stale copy of a session written to
// again after it was made.
type ArchivedSession struct {
	ArchiveCopy
	Live bool `json:"live"`
}

// ArchiveListReply is a page of the archive; Next is the cursor of the
// following page (an archive sequence), absent on the last.
type ArchiveListReply struct {
	Sessions []ArchivedSession `json:"sessions"`
	Next     string            `json:"next,omitempty"`
}

// ArchivePass is what one retention pass did: the archive.run reply.
type ArchivePass struct {
	Cutoff     time.Time `json:"cutoff,omitzero"` // sessions last written before it were archived (the default policy's)
	Candidates int       `json:"candidates"`      // idle in this node's Store at the start
	Archived   int       `json:"archived"`        // in the archive and purged from the log (Repaired included)
	Repaired   int       `json:"repaired"`        // a write raced with the purge; archived with it
	Active     int       `json:"active"`          // written to meanwhile: left in the log
	Gone       int       `json:"gone"`            // archived or purged by someone else meanwhile
	Failed     int       `json:"failed"`          // errors: left as they were, retried next pass
	Bytes      int64     `json:"bytes"`           // JSONL bytes archived
	Erased     int       `json:"erased"`          // erased by a retention policy's deleteAfter (live or archived)
	Seconds    float64   `json:"seconds"`
	// DryRun: nothing was done; Planned lists what the pass would do.
	DryRun  bool              `json:"dryRun,omitempty"`
	Planned []RetentionAction `json:"planned,omitempty"`
}

// RetentionAction is what a retention pass does (or, dry, would do) to one
// session: archive it, or erase it from the log or from the archive.
type RetentionAction struct {
	SessionID string    `json:"sessionId"`
	Cwd       string    `json:"cwd"`
	Tenant    string    `json:"tenant"`
	Action    string    `json:"action"` // "archive" or "erase"
	Where     string    `json:"where"`  // "log" or "archive"
	Modified  time.Time `json:"modified"`
}
