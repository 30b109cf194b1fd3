//go:build unix

package pisync

import (
	"os"
	"syscall"
)

// identity is the file's device and inode: a file replaced by another
// under the same name has another.
func identity(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
