package benchbase

import "runtime/metrics"

// RuntimeCPU is the Go runtime's own account of the CPU time its Ps have
// spent so far, in seconds: in the garbage collector (mark assists,
// workers and pauses) and in everything else that ran (Go code, the
// scheduler, the scavenger). It leaves out idle Ps.
//
// The runtime takes the account at the end of each GC cycle, not when it
// is read, and counts a P's time as it sees it, not the operating
// system's CPU time: a share of it (GCShare) is meaningful, its seconds
// are not comparable with ProcessCPU's.
type RuntimeCPU struct {
	GC, Other float64
}

var runtimeCPUNames = []string{
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/user:cpu-seconds",
	"/cpu/classes/scavenge/total:cpu-seconds",
}

// ReadRuntimeCPU reads the runtime's account as of its last GC cycle.
func ReadRuntimeCPU() RuntimeCPU {
	s := make([]metrics.Sample, len(runtimeCPUNames))
	for i, n := range runtimeCPUNames {
		s[i].Name = n
	}
	metrics.Read(s)
	f := func(i int) float64 {
		if s[i].Value.Kind() != metrics.KindFloat64 {
			return 0 // a metric this Go does not have
		}
		return s[i].Value.Float64()
	}
	return RuntimeCPU{GC: f(0), Other: f(1) + f(2)}
}

// GCShare is the garbage collector's share of the CPU the runtime
// accounted for between since and c, 0 when it accounted for none (no
// GC cycle ended in between).
func (c RuntimeCPU) GCShare(since RuntimeCPU) float64 {
	gc, other := c.GC-since.GC, c.Other-since.Other
	if gc < 0 || other < 0 || gc+other <= 0 {
		return 0
	}
	return gc / (gc + other)
}
