package cmd

import (
	"os"
	"syscall"
	"unsafe"
)

// isTerminal tells a terminal from a pipe, a file or /dev/null (which is a
// character device too): only a terminal answers TCGETS.
func isTerminal(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
