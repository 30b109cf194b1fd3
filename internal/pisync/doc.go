// Package pisync streams pi's own session files into the cluster and
// brings them back: the engine of "pi-ctl sync" and "pi-ctl checkout".
//
// pi (the coding agent) writes a session as a JSONL file under
// <sessions>/--<encoded cwd>--/<timestamp>_<id>.jsonl and cannot be given a
// storage backend, so the cluster meets it there. A file appears at pi's
// first flush (header and backlog) and then grows by whole lines; the
// Syncer imports the first complete lines it sees as one session and
// appends every later complete line with the id pi gave it, so that a
// retry after a crash is recognized by the node and stored once. A line
// without its newline yet is left for the next look.
//
// What is synced is remembered per file in a state file (identity, size,
// offset, last id and a hash of the synced prefix), written atomically, so
// a restart resumes without sending again and a file pi rewrote (a
// migration, a recovered file) is noticed: it is then compared with the
// session by entry id, what the cluster has is skipped and the rest is
// appended. Lines go with the append's orphans option: a line whose parent
// pi left out of the file (pi 0.73.1's forks drop label entries from the
// path) is stored as pi reads it, a root, never refused. An entry the
// cluster refuses is never dropped silently: it goes to the dead-letter
// file next to the state.
package pisync
