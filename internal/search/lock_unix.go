//go:build unix

package search

import (
	"os"
	"syscall"
)

// lockFile takes f's exclusive lock without waiting; the kernel drops it
// when the process exits, however it exits.
func lockFile(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
