package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
)

func newTestBytesStore(t testing.TB) KeyValueBytesStore {
	t.Helper()
	s := InMemory().Get("test")
	if err := s.Init(nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// collect drains it, failing the test on an iteration error.
func collect(t testing.TB, it BytesIterator) []KeyValue[[]byte, []byte] {
	t.Helper()
	defer it.Close()
	var out []KeyValue[[]byte, []byte]
	for it.Next() {
		out = append(out, KeyValue[[]byte, []byte]{Key: it.Key(), Value: it.Value()})
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func keysOf(kvs []KeyValue[[]byte, []byte]) [][]byte {
	out := make([][]byte, len(kvs))
	for i, kv := range kvs {
		out[i] = kv.Key
	}
	return out
}

func equalKeys(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func reversed(in [][]byte) [][]byte {
	out := make([][]byte, len(in))
	for i, k := range in {
		out[len(in)-1-i] = k
	}
	return out
}

func b(bs ...byte) []byte { return bs }

func TestInMemorySupplier(t *testing.T) {
	sup := InMemory()
	if got := sup.Name(); got != "in-memory" {
		t.Fatalf("Name() = %q", got)
	}
	s1, s2 := sup.Get("counts"), sup.Get("counts")
	if s1.Name() != "counts" || s1.Persistent() {
		t.Fatalf("Name() = %q, Persistent() = %v", s1.Name(), s1.Persistent())
	}
	if err := s1.Put(b(1), b(1)); err != nil {
		t.Fatal(err)
	}
	// Every task gets its own copy of the store.
	if v, _ := s2.Get(b(1)); v != nil {
		t.Fatalf("stores from one supplier share state: got %x", v)
	}
}

func TestMemoryStoreOperations(t *testing.T) {
	type step struct {
		op    string // get, put, putIfAbsent, delete, count
		key   []byte
		value []byte
		want  []byte // returned value, or the count as one byte
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"get missing", []step{
			{op: "get", key: b('a'), want: nil},
		}},
		{"put then get", []step{
			{op: "put", key: b('a'), value: b(1, 2)},
			{op: "get", key: b('a'), want: b(1, 2)},
			{op: "count", want: b(1)},
		}},
		{"put overwrites", []step{
			{op: "put", key: b('a'), value: b(1)},
			{op: "put", key: b('a'), value: b(2)},
			{op: "get", key: b('a'), want: b(2)},
			{op: "count", want: b(1)},
		}},
		{"empty value is kept, not a delete", []step{
			{op: "put", key: b('a'), value: []byte{}},
			{op: "get", key: b('a'), want: []byte{}},
			{op: "count", want: b(1)},
		}},
		{"empty key is a key", []step{
			{op: "put", key: []byte{}, value: b(9)},
			{op: "get", key: []byte{}, want: b(9)},
		}},
		{"put nil deletes", []step{
			{op: "put", key: b('a'), value: b(1)},
			{op: "put", key: b('a'), value: nil},
			{op: "get", key: b('a'), want: nil},
			{op: "count", want: b(0)},
		}},
		{"delete returns old value", []step{
			{op: "put", key: b('a'), value: b(7)},
			{op: "delete", key: b('a'), want: b(7)},
			{op: "get", key: b('a'), want: nil},
			{op: "delete", key: b('a'), want: nil},
		}},
		{"putIfAbsent puts when absent", []step{
			{op: "putIfAbsent", key: b('a'), value: b(1), want: nil},
			{op: "get", key: b('a'), want: b(1)},
		}},
		{"putIfAbsent keeps present value", []step{
			{op: "put", key: b('a'), value: b(1)},
			{op: "putIfAbsent", key: b('a'), value: b(2), want: b(1)},
			{op: "get", key: b('a'), want: b(1)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestBytesStore(t)
			for i, st := range tt.steps {
				var got []byte
				var err error
				switch st.op {
				case "get":
					got, err = s.Get(st.key)
				case "put":
					err = s.Put(st.key, st.value)
				case "putIfAbsent":
					got, err = s.PutIfAbsent(st.key, st.value)
				case "delete":
					got, err = s.Delete(st.key)
				case "count":
					var n int64
					n, err = s.ApproximateNumEntries()
					got = b(byte(n))
				}
				if err != nil {
					t.Fatalf("step %d %s: %v", i, st.op, err)
				}
				if st.op == "put" {
					continue
				}
				if !bytes.Equal(got, st.want) || (got == nil) != (st.want == nil) {
					t.Fatalf("step %d %s(%x) = %x, want %x", i, st.op, st.key, got, st.want)
				}
			}
		})
	}
}

func TestMemoryStorePutAll(t *testing.T) {
	s := newTestBytesStore(t)
	if err := s.Put(b('z'), b(0)); err != nil {
		t.Fatal(err)
	}
	err := s.PutAll([]KeyValue[[]byte, []byte]{
		{Key: b('a'), Value: b(1)},
		{Key: b('b'), Value: b(2)},
		{Key: b('a'), Value: b(3)}, // later entry wins
		{Key: b('z'), Value: nil},  // nil deletes
	})
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, must(s.All()))
	want := []KeyValue[[]byte, []byte]{{Key: b('a'), Value: b(3)}, {Key: b('b'), Value: b(2)}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("All() = %v, want %v", got, want)
	}

	// A bad entry anywhere leaves the store untouched.
	err = s.PutAll([]KeyValue[[]byte, []byte]{{Key: b('c'), Value: b(1)}, {Key: nil, Value: b(1)}})
	if !errors.Is(err, ErrNilKey) {
		t.Fatalf("PutAll with nil key: err = %v, want ErrNilKey", err)
	}
	if v, _ := s.Get(b('c')); v != nil {
		t.Fatalf("failed PutAll wrote c = %x", v)
	}
}

func TestMemoryStoreNilKey(t *testing.T) {
	s := newTestBytesStore(t)
	checks := map[string]error{
		"get":         second(s.Get(nil)),
		"put":         s.Put(nil, b(1)),
		"putIfAbsent": second(s.PutIfAbsent(nil, b(1))),
		"delete":      second(s.Delete(nil)),
	}
	for op, err := range checks {
		if !errors.Is(err, ErrNilKey) {
			t.Errorf("%s(nil): err = %v, want ErrNilKey", op, err)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func second[T any](_ T, err error) error { return err }

// orderKeys are stored in shuffled order; sorted is their unsigned byte
// order, in which 0x80 and 0xff come after 0x7f (signed order would put
// them first) and a key sorts before its extensions.
var (
	orderKeys = [][]byte{b(0xff), b(0x80), b(0x01, 0x00), b(0x7f), b(0xff, 0x01), b(0x01), b(0x02)}
	sorted    = [][]byte{b(0x01), b(0x01, 0x00), b(0x02), b(0x7f), b(0x80), b(0xff), b(0xff, 0x01)}
)

func TestMemoryStoreScanOrder(t *testing.T) {
	s := newTestBytesStore(t)
	for _, k := range orderKeys {
		if err := s.Put(k, append(b('v'), k...)); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("all", func(t *testing.T) {
		got := collect(t, must(s.All()))
		if !equalKeys(keysOf(got), sorted) {
			t.Fatalf("All() keys = %x, want %x", keysOf(got), sorted)
		}
		for _, kv := range got {
			if !bytes.Equal(kv.Value, append(b('v'), kv.Key...)) {
				t.Fatalf("value of %x = %x", kv.Key, kv.Value)
			}
		}
	})
	t.Run("reverse all", func(t *testing.T) {
		got := keysOf(collect(t, must(s.ReverseAll())))
		if want := reversed(sorted); !equalKeys(got, want) {
			t.Fatalf("ReverseAll() keys = %x, want %x", got, want)
		}
	})

	rangeTests := []struct {
		name     string
		from, to []byte
		want     [][]byte
	}{
		{"open both ends", nil, nil, sorted},
		{"inclusive both ends", b(0x02), b(0x80), [][]byte{b(0x02), b(0x7f), b(0x80)}},
		{"open start", nil, b(0x01, 0x00), [][]byte{b(0x01), b(0x01, 0x00)}},
		{"open end", b(0x80), nil, [][]byte{b(0x80), b(0xff), b(0xff, 0x01)}},
		{"bounds between keys", b(0x01, 0x00, 0x00), b(0x7f, 0x00), [][]byte{b(0x02), b(0x7f)}},
		{"single key", b(0x7f), b(0x7f), [][]byte{b(0x7f)}},
		{"0xff after 0x01", b(0x01), b(0xff), sorted[:6]},
		{"from after to is empty", b(0x80), b(0x02), nil},
		{"nothing in range", b(0x03), b(0x04), nil},
		{"empty key as lower bound", []byte{}, b(0x01), [][]byte{b(0x01)}},
	}
	for _, tt := range rangeTests {
		t.Run("range "+tt.name, func(t *testing.T) {
			got := keysOf(collect(t, must(s.Range(tt.from, tt.to))))
			if !equalKeys(got, tt.want) {
				t.Fatalf("Range(%x, %x) = %x, want %x", tt.from, tt.to, got, tt.want)
			}
		})
		t.Run("reverse range "+tt.name, func(t *testing.T) {
			got := keysOf(collect(t, must(s.ReverseRange(tt.from, tt.to))))
			if want := reversed(tt.want); !equalKeys(got, want) {
				t.Fatalf("ReverseRange(%x, %x) = %x, want %x", tt.from, tt.to, got, want)
			}
		})
	}

	prefixTests := []struct {
		prefix []byte
		want   [][]byte
	}{
		{b(0x01), [][]byte{b(0x01), b(0x01, 0x00)}},
		{b(0xff), [][]byte{b(0xff), b(0xff, 0x01)}},
		{b(0xff, 0x01), [][]byte{b(0xff, 0x01)}},
		{b(0x03), nil},
		{[]byte{}, sorted},
		{nil, sorted},
	}
	for _, tt := range prefixTests {
		t.Run(fmt.Sprintf("prefix %x", tt.prefix), func(t *testing.T) {
			got := keysOf(collect(t, must(s.PrefixScan(tt.prefix))))
			if !equalKeys(got, tt.want) {
				t.Fatalf("PrefixScan(%x) = %x, want %x", tt.prefix, got, tt.want)
			}
		})
	}
}

func TestMemoryStoreScanEmptyStore(t *testing.T) {
	s := newTestBytesStore(t)
	for name, open := range map[string]func() (BytesIterator, error){
		"all":          s.All,
		"reverse all":  s.ReverseAll,
		"range":        func() (BytesIterator, error) { return s.Range(b(1), b(2)) },
		"reverse open": func() (BytesIterator, error) { return s.ReverseRange(nil, nil) },
		"prefix":       func() (BytesIterator, error) { return s.PrefixScan(b(1)) },
	} {
		if got := collect(t, must(open())); len(got) != 0 {
			t.Errorf("%s on empty store = %v", name, got)
		}
	}
}

func beKey(i int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(i)) }

// TestMemoryStoreScanBatches crosses many iterator batches, where the
// iterator re-seeks its snapshot.
func TestMemoryStoreScanBatches(t *testing.T) {
	s := newTestBytesStore(t)
	const n = 1000
	for i := range n {
		if err := s.Put(beKey(i), beKey(i)); err != nil {
			t.Fatal(err)
		}
	}
	var want [][]byte
	for i := 100; i <= 899; i++ {
		want = append(want, beKey(i))
	}
	if got := keysOf(collect(t, must(s.Range(beKey(100), beKey(899))))); !equalKeys(got, want) {
		t.Fatalf("Range over batches: got %d keys, want %d", len(got), len(want))
	}
	if got := keysOf(collect(t, must(s.ReverseRange(beKey(100), beKey(899))))); !equalKeys(got, reversed(want)) {
		t.Fatalf("ReverseRange over batches: got %d keys, want %d", len(got), len(want))
	}
	if got := collect(t, must(s.All())); len(got) != n {
		t.Fatalf("All() = %d entries, want %d", len(got), n)
	}
	if got := collect(t, must(s.ReverseAll())); len(got) != n || !bytes.Equal(got[0].Key, beKey(n-1)) {
		t.Fatalf("ReverseAll() = %d entries, first %x", len(got), got[0].Key)
	}
	// Keys 0x00000100 to 0x000001ff share the 3-byte prefix 00 00 01.
	if got := collect(t, must(s.PrefixScan(b(0, 0, 1)))); len(got) != 256 {
		t.Fatalf("PrefixScan over batches = %d entries, want 256", len(got))
	}
}

// TestMemoryStoreWriteDuringIteration covers processors that delete what
// they scan: the iterator sees the store as of its creation.
func TestMemoryStoreWriteDuringIteration(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			s := newTestBytesStore(t)
			const n = 300
			var want [][]byte
			for i := range n {
				k := beKey(i * 2)
				want = append(want, k)
				if err := s.Put(k, b(1)); err != nil {
					t.Fatal(err)
				}
			}
			if reverse {
				want = reversed(want)
			}
			it := must(s.All())
			if reverse {
				it = must(s.ReverseAll())
			}
			var got [][]byte
			for it.Next() {
				k := it.Key()
				got = append(got, k)
				if _, err := s.Delete(k); err != nil {
					t.Fatal(err)
				}
				// Writes between the snapshot's keys must not show up.
				odd := binary.BigEndian.Uint32(k) + 1
				if err := s.Put(beKey(int(odd)), b(2)); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(it.Value(), b(1)) {
					t.Fatalf("value of %x = %x, want the snapshot's 01", k, it.Value())
				}
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			it.Close()
			if !equalKeys(got, want) {
				t.Fatalf("iterated %d keys, want %d", len(got), len(want))
			}
			after := collect(t, must(s.All()))
			if len(after) != n {
				t.Fatalf("store has %d entries after iteration, want %d", len(after), n)
			}
			for _, kv := range after {
				if binary.BigEndian.Uint32(kv.Key)%2 != 1 {
					t.Fatalf("deleted key %x still present", kv.Key)
				}
			}
		})
	}
}

func TestMemoryStoreConcurrentScanAndWrite(t *testing.T) {
	s := newTestBytesStore(t)
	for i := range 500 {
		if err := s.Put(beKey(i), b(0)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 2000 {
			if err := s.Put(beKey(i%700), b(byte(i))); err != nil {
				t.Error(err)
				return
			}
			if _, err := s.Delete(beKey((i + 350) % 700)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 4 {
		wg.Go(func() {
			for range 20 {
				it, err := s.All()
				if err != nil {
					t.Error(err)
					return
				}
				var prev []byte
				for it.Next() {
					k := it.Key()
					if prev != nil && bytes.Compare(prev, k) >= 0 {
						t.Errorf("keys out of order: %x then %x", prev, k)
					}
					prev = k
				}
				if err := it.Err(); err != nil {
					t.Error(err)
				}
				it.Close()
			}
		})
	}
	wg.Wait()
}

func TestMemoryStoreDoesNotAlias(t *testing.T) {
	s := newTestBytesStore(t)
	key, value := b('k'), b(1, 2, 3)
	if err := s.Put(key, value); err != nil {
		t.Fatal(err)
	}
	key[0], value[0] = 'x', 9 // the caller reuses its buffers

	got := must(s.Get(b('k')))
	if !bytes.Equal(got, b(1, 2, 3)) {
		t.Fatalf("store kept caller's slice: got %x", got)
	}
	got[0] = 9
	it := must(s.All())
	if !it.Next() {
		t.Fatal("no entry")
	}
	if k, v := it.Key(), it.Value(); !bytes.Equal(k, b('k')) || !bytes.Equal(v, b(1, 2, 3)) {
		t.Fatalf("Get handed out stored bytes: got %x=%x", k, v)
	} else {
		k[0], v[0] = 'x', 9
	}
	it.Close()
	if got := must(s.PutIfAbsent(b('k'), b(0))); !bytes.Equal(got, b(1, 2, 3)) {
		t.Fatalf("iterator handed out stored bytes: got %x", got)
	} else {
		got[0] = 9
	}
	if got := must(s.Delete(b('k'))); !bytes.Equal(got, b(1, 2, 3)) {
		t.Fatalf("PutIfAbsent handed out stored bytes: got %x", got)
	}
}

func TestMemoryStoreClosed(t *testing.T) {
	s := newTestBytesStore(t)
	if err := s.Put(b(1), b(1)); err != nil {
		t.Fatal(err)
	}
	open := must(s.All())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	checks := map[string]error{
		"init":        s.Init(nil),
		"flush":       s.Flush(),
		"get":         second(s.Get(b(1))),
		"put":         s.Put(b(1), b(1)),
		"putIfAbsent": second(s.PutIfAbsent(b(1), b(1))),
		"putAll":      s.PutAll([]KeyValue[[]byte, []byte]{{Key: b(1), Value: b(1)}}),
		"delete":      second(s.Delete(b(1))),
		"range":       second(s.Range(nil, nil)),
		"reverse":     second(s.ReverseRange(nil, nil)),
		"prefix":      second(s.PrefixScan(b(1))),
		"all":         second(s.All()),
		"reverseAll":  second(s.ReverseAll()),
		"count":       second(s.ApproximateNumEntries()),
	}
	for op, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: err = %v, want ErrClosed", op, err)
		}
	}
	// Closing the store ends the iterators it handed out.
	if open.Next() {
		t.Fatal("iterator yielded after store Close")
	}
	if err := open.Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("iterator Err after store Close = %v, want ErrClosed", err)
	}
}

func TestMemoryIteratorClose(t *testing.T) {
	s := newTestBytesStore(t)
	if err := s.Put(b(1), b(1)); err != nil {
		t.Fatal(err)
	}
	it := must(s.All())
	if it.Key() != nil || it.Value() != nil {
		t.Fatal("Key/Value before Next are not nil")
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if it.Next() {
		t.Fatal("Next after Close")
	}
	if err := it.Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Err after Close = %v, want ErrClosed", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

const benchKeys = 10_000

func benchStore(b *testing.B) (KeyValueBytesStore, [][]byte) {
	s := newTestBytesStore(b)
	keys := make([][]byte, benchKeys)
	for i := range keys {
		keys[i] = binary.BigEndian.AppendUint64(nil, uint64(i)*2654435761) // spread, unsorted
	}
	return s, keys
}

func BenchmarkMemoryStorePut(b *testing.B) {
	s, keys := benchStore(b)
	value := make([]byte, 64)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := s.Put(keys[i%benchKeys], value); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkMemoryStoreGet(b *testing.B) {
	s, keys := benchStore(b)
	value := make([]byte, 64)
	for _, k := range keys {
		if err := s.Put(k, value); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if v, err := s.Get(keys[i%benchKeys]); err != nil || v == nil {
			b.Fatal(v, err)
		}
		i++
	}
}
