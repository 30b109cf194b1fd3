//go:build !unix

package search

import "os"

// lockFile: no advisory locks here; bolt's own lock is all there is.
func lockFile(*os.File) bool { return true }
