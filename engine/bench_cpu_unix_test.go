//go:build unix

package engine_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used so far, user and
// system: the benchmarks divide its growth over a phase by the phase's
// wall time to tell a phase that waits from one the cores cannot keep up
// with.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
