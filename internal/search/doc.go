// Package search is what full-text search indexes of a session (issue 35):
// Extract turns one JSONL line of a pi session into a Doc, the text an
// engine tokenizes and the fields a query filters on. It knows no engine;
// the engine is chosen by measurement (docs/BENCHMARKS.md, "Search
// engines") and plugs in behind it.
package search
