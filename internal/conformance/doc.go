// Package conformance loads the test vectors written by pi's own
// SessionManager (../shared/conformance) and compares our results with
// them as JSON values, for the tests of every layer (tree, session store,
// pi-ctl, the HTTP API).
package conformance
