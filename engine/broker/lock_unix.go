//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile is the file in a data directory that a running broker holds an
// exclusive lock on.
const lockFile = "stoatctl-broker.lock"

// lockDir takes an exclusive, non-blocking lock on dir and returns the
// function that releases it. The lock is flock(2)'s, so the kernel drops it
// when the process dies: a killed broker never leaves a stale lock behind.
func lockDir(dir string) (func() error, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errors.New("another broker is using it")
		}
		return nil, fmt.Errorf("lock: %w", err)
	}
	return f.Close, nil
}
