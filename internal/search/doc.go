// Package search is full-text search over every session (issue 35): what
// an entry puts in the index (Extract), the query language (Parse, whose
// SyntaxError names the position), the index of one log (Index) and the
// snippets of hits (Query.Snippet).
//
// The engine is bleve's scorch, chosen by measurement (docs/BENCHMARKS.md,
// "Search engines"). An Index is derived state, like a Store: it follows
// its log on its own (Run) from the sequence it has indexed, and each
// batch of records is one bleve batch that also records that sequence and
// the cwd of the sessions it begins, so that what is on disk is the index
// of a prefix of the log, after a kill -9 too. It stores no text: the
// Store holds every entry, and a hit is filled from there (internal/
// service). What changes after an entry is written — the session's name,
// its default path, labels — is answered from the Store at query time
// (Resolver), so the index never rewrites a document.
package search
