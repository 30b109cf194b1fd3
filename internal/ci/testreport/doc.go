// Command testreport turns `go test -json` into what CI shows: the lines
// go test prints without -v (each package's ok or FAIL, a failing test's
// whole output, each skipped test with its reason), and a record of the
// suite (duration, tests run, failed, skipped and why) appended to a file;
// -table prints every suite recorded there as one table, so a skipped
// browser, compose or PostgreSQL suite shows at the end of the log instead
// of vanishing in it. .ci/run uses it; so can anyone:
//
//	go test -json ./internal/api/ | go run ./internal/ci/testreport -suite api -record /tmp/r.jsonl
//	go run ./internal/ci/testreport -table -record /tmp/r.jsonl
package main
