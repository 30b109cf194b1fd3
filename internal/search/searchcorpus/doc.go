// Package searchcorpus is the corpus of full-text search (issue 35), for
// its tests and benchmarks (pi-bench search links it, so it is no test
// kit: it imports only internal/search): a generator of realistic pi
// sessions written as pi writes them (one JSONL
// file a session, deterministic from a seed), Load to turn those files into
// search.Docs as a node would (each entry with its session's cwd, name and
// default path), and a brute-force Oracle of the query forms that every
// engine's hits must equal. Its tests hold the engines of the choice side
// by side, built only with the tag searchengines (go test ./... compiles
// no engine): BenchmarkEngines measures bleve and SQLite FTS5 on one
// corpus (docs/BENCHMARKS.md, "Search engines"), TestEnginesAgree checks
// their hits against the oracle.
package searchcorpus
