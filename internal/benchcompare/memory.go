package benchcompare

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strconv"

	"github.com/stoatflow/stoatctl/engine/state"
)

// StoreMemory writes keys distinct keys into a fresh in-memory key-value
// store as a count writes them ("key-<i>", a timestamped 8-byte count in
// Kafka Streams' layout) and returns the heap the store holds per key
// after a GC, and the peak heap in use sampled every 64 k writes (the
// garbage of growing the store included). It measures the store alone, in
// this process, with nothing else running.
func StoreMemory(keys int) (Memory, error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	peak := ms.HeapInuse
	s := state.InMemory().Get("counts")
	if err := s.Init(nil); err != nil {
		return Memory{}, fmt.Errorf("memory: init store: %w", err)
	}
	count := make([]byte, 8)
	key := make([]byte, 0, 32)
	for i := range keys {
		binary.BigEndian.PutUint64(count, uint64(i%97+1))
		key = strconv.AppendInt(append(key[:0], "key-"...), int64(i), 10)
		if err := s.Put(key, state.EncodeValueAndTimestamp(count, int64(i))); err != nil {
			return Memory{}, fmt.Errorf("memory: put key %d: %w", i, err)
		}
		if i%(64<<10) == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	peak = max(peak, ms.HeapInuse)
	retained := uint64(0)
	if ms.HeapAlloc > before {
		retained = ms.HeapAlloc - before
	}
	runtime.KeepAlive(s)
	_ = s.Close()
	return Memory{Keys: keys, BytesPerKey: float64(retained) / float64(keys), PeakHeapBytes: peak, RetainedBytes: retained}, nil
}
