// Package archtest holds the test that keeps docs/ARCHITECTURE.md true: it
// reads the document's import rules and holds them against `go list`, so a
// package that imports what the document forbids, or a package the document
// does not name, fails the build's tests. It also holds every package to a
// doc.go of its own.
package archtest
