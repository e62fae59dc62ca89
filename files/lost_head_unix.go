//go:build unix

package files

import (
	"io"
	"os"
	"syscall"

	"github.com/mcpsafe/mcpsafe/safefs"
)

// readHead reads up to n bytes of the file i describes: opened without
// following a symlink in its last component, without blocking on a FIFO,
// and read only when the open file is the inspected one (device, inode,
// regular, same size), so a name swapped since the inspection shows
// nothing rather than another file's content.
func readHead(i safefs.Info, n int) ([]byte, bool) {
	f, err := os.OpenFile(i.Path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return nil, false
	}
	if uint64(st.Dev) != i.Dev || uint64(st.Ino) != i.Ino || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size != i.Size {
		return nil, false
	}
	buf := make([]byte, n)
	got, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, false
	}
	return buf[:got], true
}
