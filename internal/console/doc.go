// Package console is pi-node's web console (--console): plain ES modules,
// a stylesheet and a page, embedded in the binary and served under
// /console/. It needs no build step and loads nothing from elsewhere; the
// page asks the same node's /v1 API for everything, with a token the
// operator enters once (docs/CONSOLE.md). Handler serves the files with a
// Content-Security-Policy that allows only this origin.
package console
