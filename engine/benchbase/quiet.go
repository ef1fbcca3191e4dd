package benchbase

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Quiet waits until the machine is quiet: a 200 ms window in which the
// CPUs were busy at most busyMax of the time (0.2: a fifth), or until
// maxWait has passed, and reports the busy share of the last window and
// whether it got there. A run timed right after loading its input, or
// right after another system's run, otherwise starts while a broker (or
// a JVM) still collects the garbage of what came before, and that lands
// on whoever runs next. Where /proc/stat cannot be read it returns at
// once, quiet.
func Quiet(ctx context.Context, busyMax float64, maxWait time.Duration) (busy float64, quiet bool) {
	deadline := time.Now().Add(maxWait)
	prev, err := cpuTicks()
	if err != nil {
		return 0, true
	}
	for {
		select {
		case <-ctx.Done():
			return busy, false
		case <-time.After(200 * time.Millisecond):
		}
		cur, err := cpuTicks()
		if err != nil {
			return 0, true
		}
		busy = cur.busyShare(prev)
		if busy <= busyMax {
			return busy, true
		}
		if time.Now().After(deadline) {
			return busy, false
		}
		prev = cur
	}
}

// ticks are /proc/stat's first line: the CPUs' busy and idle time.
type ticks struct{ busy, idle uint64 }

// busyShare is the share of the time between from and t that was busy.
func (t ticks) busyShare(from ticks) float64 {
	b, i := t.busy-from.busy, t.idle-from.idle
	if b+i == 0 {
		return 0
	}
	return float64(b) / float64(b+i)
}

func cpuTicks() (ticks, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return ticks{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return ticks{}, fmt.Errorf("/proc/stat: empty")
	}
	return parseCPULine(sc.Text())
}

// parseCPULine reads /proc/stat's "cpu user nice system idle iowait irq
// softirq steal ..." line: idle and iowait are idle, the rest busy.
func parseCPULine(line string) (ticks, error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return ticks{}, fmt.Errorf("/proc/stat: first line %q is not the cpu line", line)
	}
	var t ticks
	for i, s := range f[1:] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return ticks{}, fmt.Errorf("/proc/stat: field %d of %q: %w", i+1, line, err)
		}
		if i == 3 || i == 4 { // idle, iowait
			t.idle += n
		} else if i < 8 { // user, nice, system, irq, softirq, steal; not guest (counted in user)
			t.busy += n
		}
	}
	return t, nil
}
