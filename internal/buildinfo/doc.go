// Package buildinfo says which build a binary is: its version, the commit
// it was built from and the Go release, for `pi-node --version`,
// /v1/status and the pi_build_info metric. The Makefile stamps version and
// revision with -ldflags -X (the image's binaries are built on the host,
// where git is); otherwise they come from what the Go toolchain recorded
// (the module's version and the VCS settings), and say "devel" and
// "unknown" when it recorded nothing (go build -buildvcs=false, go test).
package buildinfo
