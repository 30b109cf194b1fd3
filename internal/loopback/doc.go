// Package loopback picks free TCP ports on 127.0.0.1. It is shared by the
// tests (through testutil) and by pi-bench, which starts a pi-node on
// free ports at run time; it does not import testing, so production code
// may use it.
package loopback
