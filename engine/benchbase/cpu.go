package benchbase

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ), 100 a
// second on every Linux ABI Go runs on.
const clockTick = 10 * time.Millisecond

// PIDCPU is the user and system CPU time process pid (all its threads)
// has used so far, from /proc/<pid>/stat, to a tick (10 ms): how the
// comparison meters a broker or a JVM it started.
func PIDCPU(pid int) (time.Duration, error) {
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
		return 0, fmt.Errorf("proc stat: no command name in %.40q", b)
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
