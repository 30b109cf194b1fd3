// Package archive bounds the growth of the session log: sessions idle for
// longer than a retention are exported, stored as one message each in an
// archive stream with a handful of subjects, and purged from the log, so the
// log's per-subject index (and every node's Store) holds the active
// sessions only. An operator restores an archived session on demand.
//
// The package is the engine of it, over two contracts of internal/session:
// the Log (reads, and imports for restores) and the Archive itself, which
// internal/jetstream implements (stream PI_ARCHIVE, a lease
// bucket, and a purge of a session's subject up to a sequence). It never
// deletes a session's records before a complete copy of them is
// acknowledged by the archive; see Archiver.Archive for the order of the
// steps and what happens when a write races with them.
package archive
