package benchcompare

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// On two cores every system shares the machine with its broker (and the
// harness), so a system's rate is mostly how much CPU it and the broker
// spend on a record. A Sample carries both, measured over the system's
// run: the report gives them per million input records, which is what
// tells a slower engine from a busier broker.

// selfCPU is the user and system CPU time this process has used so far:
// the bare loop's and stoatctl's, which run inside it.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ), 100 a
// second on every Linux ABI Go runs on.
const clockTick = 10 * time.Millisecond

// procCPU is the user and system CPU time process pid has used so far,
// from /proc/<pid>/stat (to a tick, 10 ms).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) from a
// /proc/<pid>/stat line. The command name (field 2, in parentheses) may
// hold spaces and parentheses itself, so the fields are counted from the
// last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("proc stat: no command name in %q", firstLine(string(b)))
	}
	// After ") ": field 3 (state) onwards.
	f := strings.Fields(string(b[i+1:]))
	const utime, stime = 14 - 3, 15 - 3
	if len(f) <= stime {
		return 0, fmt.Errorf("proc stat: %d fields after the command name, want more than %d", len(f), stime)
	}
	var total int64
	for _, s := range []string{f[utime], f[stime]} {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proc stat: cpu time %q: %w", s, err)
		}
		total += n
	}
	return time.Duration(total) * clockTick, nil
}

// pidFile reads a process id written by scripts/kafka.sh (broker.pid).
func pidFile(dir, name string) int {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// cpuMeter measures the CPU one process uses between start and stop;
// a pid of 0 or a process gone meanwhile measures nothing (ok false).
type cpuMeter struct {
	pid   int
	start time.Duration
	ok    bool
}

func meterPID(pid int) cpuMeter {
	if pid <= 0 {
		return cpuMeter{}
	}
	t, err := procCPU(pid)
	return cpuMeter{pid: pid, start: t, ok: err == nil}
}

func (m cpuMeter) stop() (time.Duration, bool) {
	if !m.ok {
		return 0, false
	}
	t, err := procCPU(m.pid)
	if err != nil || t < m.start {
		return 0, false
	}
	return t - m.start, true
}
