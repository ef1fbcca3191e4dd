package benchcompare

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stoatflow/stoatctl/engine/benchbase"
)

// On two cores every system shares the machine with its broker (and the
// harness), so a system's rate is mostly how much CPU it and the broker
// spend on a record. A Sample carries both, measured over the system's
// run: the report gives them per million input records, which is what
// tells a slower engine from a busier broker.

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
	t, err := benchbase.PIDCPU(pid)
	return cpuMeter{pid: pid, start: t, ok: err == nil}
}

func (m cpuMeter) stop() (time.Duration, bool) {
	if !m.ok {
		return 0, false
	}
	t, err := benchbase.PIDCPU(m.pid)
	if err != nil || t < m.start {
		return 0, false
	}
	return t - m.start, true
}
