package state

import (
	"time"

	"github.com/stoatflow/stoatctl/engine/metrics"
)

// MeteredContext is a Context whose stores meter their operations (the
// engine's tasks at stoatflow.metrics.recording.level=debug, as Kafka
// Streams' state-store metrics are at debug level). StoreMeter claims the
// meters of one instance of store; release hands them back when the store
// closes. A nil meter means no metering.
type MeteredContext interface {
	StoreMeter(store string) (m *metrics.StoreMeter, release func())
}

// meteredStore counts every operation on a byte store and times one in
// metrics.SampleEvery (flushes, which are rare, every time). It meters
// the byte store, so a window or session store's operations are counted
// as the byte operations its indexes make.
type meteredStore struct {
	inner   KeyValueBytesStore
	m       *metrics.StoreMeter
	release func()
}

// metered wraps s, the byte store of store, when ctx meters store
// operations. The meters go by the store's name, not the byte store's: a
// RocksDB byte store's carries its task's prefix.
func metered(ctx Context, store string, s KeyValueBytesStore) KeyValueBytesStore {
	mc, ok := ctx.(MeteredContext)
	if !ok {
		return s
	}
	m, release := mc.StoreMeter(store)
	if m == nil {
		return s
	}
	return &meteredStore{inner: s, m: m, release: release}
}

// begin counts an operation of kind op and says when it is to be timed
// (zero when not): every SampleEvery-th of its kind. The count is atomic
// because a global store is read by the lanes while the global runner
// writes it; one atomic add is all an untimed operation costs.
func (s *meteredStore) begin(op int) time.Time {
	if s.m.Ops[op].Events.Add(1)%metrics.SampleEvery != 1 {
		return time.Time{}
	}
	return time.Now()
}

func (s *meteredStore) end(op int, start time.Time) {
	if !start.IsZero() {
		s.m.Ops[op].Timing.Observe(time.Since(start), start)
	}
}

func (s *meteredStore) Name() string           { return s.inner.Name() }
func (s *meteredStore) Init(ctx Context) error { return s.inner.Init(ctx) }
func (s *meteredStore) Persistent() bool       { return s.inner.Persistent() }

func (s *meteredStore) Flush() error {
	s.m.Ops[metrics.OpFlush].Events.Add(1)
	start := time.Now()
	err := s.inner.Flush()
	s.end(metrics.OpFlush, start)
	return err
}

func (s *meteredStore) Close() error {
	err := s.inner.Close()
	if s.release != nil {
		s.release()
		s.release = nil
	}
	return err
}

func (s *meteredStore) Get(key []byte) ([]byte, error) {
	start := s.begin(metrics.OpGet)
	v, err := s.inner.Get(key)
	s.end(metrics.OpGet, start)
	return v, err
}

func (s *meteredStore) Put(key, value []byte) error {
	start := s.begin(metrics.OpPut)
	err := s.inner.Put(key, value)
	s.end(metrics.OpPut, start)
	return err
}

func (s *meteredStore) PutIfAbsent(key, value []byte) ([]byte, error) {
	start := s.begin(metrics.OpPutIfAbsent)
	v, err := s.inner.PutIfAbsent(key, value)
	s.end(metrics.OpPutIfAbsent, start)
	return v, err
}

func (s *meteredStore) PutAll(entries []KeyValue[[]byte, []byte]) error {
	start := s.begin(metrics.OpPutAll)
	err := s.inner.PutAll(entries)
	s.end(metrics.OpPutAll, start)
	return err
}

func (s *meteredStore) Delete(key []byte) ([]byte, error) {
	start := s.begin(metrics.OpDelete)
	v, err := s.inner.Delete(key)
	s.end(metrics.OpDelete, start)
	return v, err
}

// putHeld, appendValue and DeleteRange pass the backend's own fast paths
// on (store.go), metered as the operations they stand for.
func (s *meteredStore) putHeld(key, value []byte) (*uint64, error) {
	start := s.begin(metrics.OpPut)
	h, err := putHeld(s.inner, key, value)
	s.end(metrics.OpPut, start)
	return h, err
}

func (s *meteredStore) appendValue(dst, key []byte) ([]byte, error) {
	start := s.begin(metrics.OpGet)
	v, err := getAppending(s.inner, dst, key)
	s.end(metrics.OpGet, start)
	return v, err
}

// WriteEpoch and RangeSinceEpoch pass the backend's epochs on (EpochLayered);
// a range of one epoch is metered as the range it stands for.
func (s *meteredStore) WriteEpoch() (int64, bool) { return writeEpoch(s.inner) }

func (s *meteredStore) RangeSinceEpoch(epoch int64, from, to []byte) (BytesIterator, error) {
	return s.scan(metrics.OpRange, func() (BytesIterator, error) { return rangeSinceEpoch(s.inner, epoch, from, to) })
}

func (s *meteredStore) GetOfEpoch(epoch int64, key []byte) ([]byte, error) {
	start := s.begin(metrics.OpGet)
	v, err := getOfEpoch(s.inner, epoch, key)
	s.end(metrics.OpGet, start)
	return v, err
}

func (s *meteredStore) DeleteRange(from, to []byte) error {
	start := s.begin(metrics.OpDelete)
	err := DeleteRange(s.inner, from, to)
	s.end(metrics.OpDelete, start)
	return err
}

// The scans are timed to the iterator's opening, not to its close.
func (s *meteredStore) scan(op int, open func() (BytesIterator, error)) (BytesIterator, error) {
	start := s.begin(op)
	it, err := open()
	s.end(op, start)
	return it, err
}

func (s *meteredStore) Range(from, to []byte) (BytesIterator, error) {
	return s.scan(metrics.OpRange, func() (BytesIterator, error) { return s.inner.Range(from, to) })
}

func (s *meteredStore) ReverseRange(from, to []byte) (BytesIterator, error) {
	return s.scan(metrics.OpRange, func() (BytesIterator, error) { return s.inner.ReverseRange(from, to) })
}

func (s *meteredStore) PrefixScan(prefix []byte) (BytesIterator, error) {
	return s.scan(metrics.OpPrefixScan, func() (BytesIterator, error) { return s.inner.PrefixScan(prefix) })
}

func (s *meteredStore) All() (BytesIterator, error) {
	return s.scan(metrics.OpRange, s.inner.All)
}

func (s *meteredStore) ReverseAll() (BytesIterator, error) {
	return s.scan(metrics.OpRange, s.inner.ReverseAll)
}

func (s *meteredStore) ApproximateNumEntries() (int64, error) { return s.inner.ApproximateNumEntries() }
