//go:build !unix

package loopback

import "os"

// lockFile: no advisory locks here; a port is then held against this
// process's own reuse only.
func lockFile(*os.File) bool { return true }
