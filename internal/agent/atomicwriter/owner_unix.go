//go:build unix

package atomicwriter

import (
	"io/fs"
	"syscall"
)

func ownerOf(fi fs.FileInfo) (uid, gid int64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int64(st.Uid), int64(st.Gid), true
}
