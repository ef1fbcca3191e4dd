package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"
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
// iterator re-seeks the tree.
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
// they scan: the iterator visits the keys the store held when it was
// opened, whatever is written meanwhile.
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
				// Keys inserted after the scan began must not show up.
				odd := binary.BigEndian.Uint32(k) + 1
				if err := s.Put(beKey(int(odd)), b(2)); err != nil {
					t.Fatal(err)
				}
				// Value is the value read by Next, before the delete.
				if !bytes.Equal(it.Value(), b(1)) {
					t.Fatalf("value of %x = %x, want 01", k, it.Value())
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

// TestMemoryStoreIteratorReadsLiveValues pins what an iterator sees of
// writes made after it was opened to keys it has not reached yet. The key
// set is fixed when the iterator is opened, but values are read when Next
// reaches them, as in Kafka Streams' in-memory store, which copies its key
// set and reads each value from its map: an update shows, and a delete
// hides the key. (The store used to hand out values as of the scan's
// start; reading them live is what lets an update rewrite a key's value in
// place instead of copying tree nodes.) Unlike Kafka Streams, a key deleted
// and put again counts as a new key, hidden like any key inserted after the
// scan began.
func TestMemoryStoreIteratorReadsLiveValues(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			s := newTestBytesStore(t)
			// Enough keys for several batches, so that writes land both in
			// the batch the iterator holds and in later ones.
			const n = 3 * iteratorBatch
			for i := range n {
				if err := s.Put(beKey(i*10), b(0)); err != nil {
					t.Fatal(err)
				}
			}
			open := s.All
			if reverse {
				open = s.ReverseAll
			}
			it := must(open())
			defer it.Close()
			if !it.Next() {
				t.Fatal("no first entry")
			}
			first := binary.BigEndian.Uint32(it.Key()) / 10
			ahead := func(j int) int { // the j-th key after the first, in scan order
				if reverse {
					return int(first) - j
				}
				return int(first) + j
			}
			want := map[uint32][]byte{}
			for j := 1; j < n; j++ {
				i := ahead(j)
				k := beKey(i * 10)
				switch j % 5 {
				case 0: // updated: shows the new value
					want[uint32(i*10)] = b(1)
					if err := s.Put(k, b(1)); err != nil {
						t.Fatal(err)
					}
				case 1: // deleted: skipped
					if _, err := s.Delete(k); err != nil {
						t.Fatal(err)
					}
				case 2: // deleted and put again: a new key, skipped
					if _, err := s.Delete(k); err != nil {
						t.Fatal(err)
					}
					if err := s.Put(k, b(2)); err != nil {
						t.Fatal(err)
					}
				case 3: // grown past its record's room: still the same key
					big := bytes.Repeat(b(3), 100)
					want[uint32(i*10)] = big
					if err := s.Put(k, big); err != nil {
						t.Fatal(err)
					}
				default: // untouched
					want[uint32(i*10)] = b(0)
				}
				// New keys next to it: never shown.
				if err := s.Put(beKey(i*10+1), b(9)); err != nil {
					t.Fatal(err)
				}
			}
			got := map[uint32][]byte{}
			var prev []byte
			for it.Next() {
				k := it.Key()
				if prev != nil && (bytes.Compare(prev, k) < 0) == reverse {
					t.Fatalf("keys out of order: %x then %x", prev, k)
				}
				prev = k
				got[binary.BigEndian.Uint32(k)] = it.Value()
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("iterated %v\nwant %v", got, want)
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
			// Values rewritten in place, and grown past their records.
			if err := s.Put(beKey(i%700), bytes.Repeat(b(byte(i)), 1+i%3*20)); err != nil {
				t.Error(err)
				return
			}
			if _, err := s.Delete(beKey((i + 350) % 700)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	// A value is one byte repeated, unless a read saw a write half done.
	whole := func(v []byte) bool { return len(v) > 0 && bytes.Count(v, v[:1]) == len(v) }
	wg.Go(func() {
		for i := range 2000 {
			if v, err := s.Get(beKey(i % 700)); err != nil || v != nil && !whole(v) {
				t.Errorf("Get = %x, %v", v, err)
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
					if v := it.Value(); !whole(v) {
						t.Errorf("value of %x = %x", k, v)
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

// check verifies the tree's invariants: keys in order and within their
// separators, every leaf at the same depth, node sizes within bounds, no
// references past a node's length, and len.
func (t *bptree) check() error {
	leafDepth := -1
	var walk func(n *bnode, depth int, lo, hi *string) (int, error)
	walk = func(n *bnode, depth int, lo, hi *string) (int, error) {
		root := n == t.root
		for i, e := range n.keys {
			if i > 0 && !keyLess(n.keys[i-1].key, e.key) {
				return 0, fmt.Errorf("keys out of order at depth %d: %x, %x", depth, n.keys[i-1].key, e.key)
			}
			if lo != nil && keyLess(e.key, *lo) || hi != nil && !keyLess(e.key, *hi) {
				return 0, fmt.Errorf("key %x outside its separators at depth %d", e.key, depth)
			}
		}
		for _, e := range n.keys[len(n.keys):cap(n.keys)] {
			if unsafe.StringData(e.key) != nil {
				return 0, fmt.Errorf("node keeps a key past its length at depth %d", depth)
			}
		}
		if n.kids == nil {
			if leafDepth >= 0 && depth != leafDepth {
				return 0, fmt.Errorf("leaves at depths %d and %d", leafDepth, depth)
			}
			leafDepth = depth
			if len(n.keys) > nodeMax || !root && len(n.keys) < nodeMin {
				return 0, fmt.Errorf("leaf of %d entries", len(n.keys))
			}
			return len(n.keys), nil
		}
		if len(n.kids) != len(n.keys)+1 {
			return 0, fmt.Errorf("inner node of %d keys and %d children", len(n.keys), len(n.kids))
		}
		if len(n.kids) > nodeMax || !root && len(n.kids) < nodeMin || root && len(n.kids) < 2 {
			return 0, fmt.Errorf("inner node of %d children (root %v)", len(n.kids), root)
		}
		for _, k := range n.kids[len(n.kids):cap(n.kids)] {
			if k != nil {
				return 0, fmt.Errorf("node keeps a child past its length at depth %d", depth)
			}
		}
		total := 0
		for i, k := range n.kids {
			klo, khi := lo, hi
			if i > 0 {
				klo = &n.keys[i-1].key
			}
			if i < len(n.keys) {
				khi = &n.keys[i].key
			}
			c, err := walk(k, depth+1, klo, khi)
			if err != nil {
				return 0, err
			}
			total += c
		}
		return total, nil
	}
	n, err := walk(t.root, 0, nil, nil)
	if err != nil {
		return err
	}
	if n != t.len {
		return fmt.Errorf("len = %d, tree holds %d", t.len, n)
	}
	return nil
}

// TestMemoryStoreModel runs random operations against the store and a map
// and compares them, checking the tree as it goes. Keys come from a
// small alphabet that stresses unsigned order and shared prefixes, in
// phases that grow the tree, churn it and shrink it to nothing, so that
// nodes split, merge and share entries.
func TestMemoryStoreModel(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			testMemoryStoreModel(t, seed)
		})
	}
}

func testMemoryStoreModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	store := newTestBytesStore(t)
	tree := &store.(*memoryStore).tree
	model := map[string][]byte{}
	alphabet := []byte{0x00, 0x01, 0x7f, 0x80, 0xff}
	key := func() []byte {
		// Mostly short keys over a small alphabet, so that writes hit
		// existing keys; some long ones with shared prefixes.
		k := make([]byte, rng.IntN(6))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if rng.IntN(4) == 0 {
			k = append(bytes.Repeat(b(0x42), 8+rng.IntN(16)), k...)
		}
		return k
	}
	value := func() []byte {
		if rng.IntN(10) == 0 {
			return nil // a delete
		}
		v := make([]byte, rng.IntN(3)*rng.IntN(40)) // empty often, sometimes long
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		return v
	}
	apply := func(k, v []byte) {
		if v == nil {
			delete(model, string(k))
		} else {
			model[string(k)] = bytes.Clone(v)
		}
	}
	bound := func() []byte {
		if rng.IntN(4) == 0 {
			return nil
		}
		return key()
	}
	// expect lists the model's entries in [from, to] with prefix, in scan
	// order.
	expect := func(from, to, prefix []byte, reverse bool) []KeyValue[[]byte, []byte] {
		var out []KeyValue[[]byte, []byte]
		for k, v := range model {
			kb := []byte(k)
			if from != nil && bytes.Compare(kb, from) < 0 || to != nil && bytes.Compare(kb, to) > 0 ||
				prefix != nil && !bytes.HasPrefix(kb, prefix) {
				continue
			}
			out = append(out, KeyValue[[]byte, []byte]{Key: kb, Value: v})
		}
		slices.SortFunc(out, func(a, c KeyValue[[]byte, []byte]) int {
			if reverse {
				return bytes.Compare(c.Key, a.Key)
			}
			return bytes.Compare(a.Key, c.Key)
		})
		return out
	}
	same := func(op string, got, want []KeyValue[[]byte, []byte]) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, want %d", op, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) || got[i].Value == nil {
				t.Fatalf("%s: entry %d = %x=%x, want %x=%x", op, i, got[i].Key, got[i].Value, want[i].Key, want[i].Value)
			}
		}
	}
	for phase, writes := range []int{4, 2, 1, 0} { // weight of writes against deletes
		for i := range 2000 {
			switch op := rng.IntN(10); {
			case op < 4:
				k, v := key(), value()
				if rng.IntN(5) > writes {
					v = nil
				}
				if err := store.Put(k, v); err != nil {
					t.Fatal(err)
				}
				apply(k, v)
			case op == 4:
				var batch []KeyValue[[]byte, []byte]
				for range rng.IntN(8) {
					k, v := key(), value()
					if rng.IntN(5) > writes {
						v = nil
					}
					batch = append(batch, KeyValue[[]byte, []byte]{Key: k, Value: v})
				}
				if err := store.PutAll(batch); err != nil {
					t.Fatal(err)
				}
				for _, kv := range batch {
					apply(kv.Key, kv.Value)
				}
			case op == 5:
				k := key()
				got, err := store.Delete(k)
				if err != nil {
					t.Fatal(err)
				}
				if want, ok := model[string(k)]; !bytes.Equal(got, want) || ok != (got != nil) {
					t.Fatalf("phase %d: Delete(%x) = %x, want %x", phase, k, got, want)
				}
				delete(model, string(k))
			case op == 6:
				k, v := key(), value()
				if v == nil {
					v = []byte{}
				}
				got, err := store.PutIfAbsent(k, v)
				if err != nil {
					t.Fatal(err)
				}
				want, ok := model[string(k)]
				if !bytes.Equal(got, want) || ok != (got != nil) {
					t.Fatalf("phase %d: PutIfAbsent(%x) = %x, want %x", phase, k, got, want)
				}
				if !ok {
					apply(k, v)
				}
			case op == 7:
				k := key()
				got, err := store.Get(k)
				if err != nil {
					t.Fatal(err)
				}
				if want, ok := model[string(k)]; !bytes.Equal(got, want) || ok != (got != nil) {
					t.Fatalf("phase %d: Get(%x) = %x, want %x", phase, k, got, want)
				}
			default:
				from, to, prefix := bound(), bound(), []byte(nil)
				reverse := rng.IntN(2) == 0
				var it BytesIterator
				switch {
				case rng.IntN(4) == 0 && !reverse:
					prefix = key()
					prefix = prefix[:min(len(prefix), rng.IntN(3))]
					from, to = prefix, nil
					it = must(store.PrefixScan(prefix))
				case reverse:
					it = must(store.ReverseRange(from, to))
				default:
					it = must(store.Range(from, to))
				}
				want := expect(from, to, prefix, reverse)
				if from != nil && to != nil && bytes.Compare(from, to) > 0 {
					want = nil
				}
				same(fmt.Sprintf("phase %d: scan [%x, %x] prefix %x reverse %v", phase, from, to, prefix, reverse), collect(t, it), want)
			}
			if i%8 == 0 {
				if err := tree.check(); err != nil {
					t.Fatalf("phase %d: %v", phase, err)
				}
			}
		}
		if n := must(store.ApproximateNumEntries()); n != int64(len(model)) {
			t.Fatalf("phase %d: %d entries, want %d", phase, n, len(model))
		}
	}
	// Empty the store, in key order so that whole leaves go.
	for _, kv := range expect(nil, nil, nil, false) {
		if _, err := store.Delete(kv.Key); err != nil {
			t.Fatal(err)
		}
		if err := tree.check(); err != nil {
			t.Fatal(err)
		}
	}
	if n := must(store.ApproximateNumEntries()); n != 0 {
		t.Fatalf("%d entries left", n)
	}
}

// TestMemoryStoreTreeShapes grows the tree to several levels and shrinks
// it again in the orders that stress splits and rebalancing: ascending,
// descending, random, and ranges removed whole, as expiry does.
func TestMemoryStoreTreeShapes(t *testing.T) {
	const n = 20_000 // three levels of nodes of up to nodeMax
	rng := rand.New(rand.NewPCG(4, 4))
	ascending := make([]int, n)
	for i := range ascending {
		ascending[i] = i
	}
	descending := slices.Clone(ascending)
	slices.Reverse(descending)
	orders := map[string]func() []int{
		"ascending":  func() []int { return ascending },
		"descending": func() []int { return descending },
		"random":     func() []int { return rng.Perm(n) },
	}
	for insName, insOrder := range orders {
		for delName, delOrder := range orders {
			t.Run(insName+"/"+delName, func(t *testing.T) {
				store := newTestBytesStore(t)
				tree := &store.(*memoryStore).tree
				checkpoint := func(want int) {
					t.Helper()
					if err := tree.check(); err != nil {
						t.Fatal(err)
					}
					if tree.len != want {
						t.Fatalf("len %d, want %d", tree.len, want)
					}
				}
				for j, i := range insOrder() {
					if err := store.Put(beKey(i), beKey(i)); err != nil {
						t.Fatal(err)
					}
					if j%5000 == 0 {
						checkpoint(j + 1)
					}
				}
				checkpoint(n)
				if got := collect(t, must(store.ReverseAll())); len(got) != n || !bytes.Equal(got[0].Key, beKey(n-1)) {
					t.Fatalf("ReverseAll: %d entries", len(got))
				}
				// Remove a tenth as one range, then the rest one by one.
				lo, hi := n/3, n/3+n/10
				var dels []KeyValue[[]byte, []byte]
				for i := lo; i < hi; i++ {
					dels = append(dels, KeyValue[[]byte, []byte]{Key: beKey(i)})
				}
				if err := store.PutAll(dels); err != nil {
					t.Fatal(err)
				}
				left := n - (hi - lo)
				checkpoint(left)
				if got := collect(t, must(store.Range(beKey(lo-1), beKey(hi)))); len(got) != 2 {
					t.Fatalf("Range across the removed range = %d entries, want 2", len(got))
				}
				for _, i := range delOrder() {
					if i >= lo && i < hi {
						continue
					}
					if _, err := store.Delete(beKey(i)); err != nil {
						t.Fatal(err)
					}
					if left--; left%5000 == 0 {
						checkpoint(left)
					}
				}
				checkpoint(0)
			})
		}
	}
}
